// The unmodified openai Node SDK reads countdown streams (INPUT) across keep-alives, against
// BASE_URL: `responses.create({stream: true})` and, for a background response,
// `responses.retrieve(id, {stream: true, starting_after: AFTER})`. Prints one JSON line:
// {"create": [texts], "retrieve": [texts], "retrieve_first_seq": n}, or throws.
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.env.BASE_URL, apiKey: "test-key", maxRetries: 0 });
const input = process.env.INPUT;
const after = Number(process.env.AFTER ?? "1");

async function texts(stream) {
  const out = [];
  let first = null;
  for await (const event of stream) {
    first ??= event.sequence_number;
    if (event.type === "response.output_text.delta") out.push(event.delta);
  }
  return { out, first };
}

const [created, retrieved] = await Promise.all([
  texts(await client.responses.create({ model: "countdown", input, stream: true })),
  (async () => {
    const bg = await client.responses.create({ model: "countdown", input, background: true });
    return texts(await client.responses.retrieve(bg.id, { stream: true, starting_after: after }));
  })(),
]);
console.log(
  JSON.stringify({ create: created.out, retrieve: retrieved.out, retrieve_first_seq: retrieved.first }),
);
