// Unmodified Node clients read countdown streams (INPUT) across keep-alives, against BASE_URL:
// the openai Node SDK's `responses.create({stream: true})` and, for a background response,
// `responses.retrieve(id, {stream: true, starting_after: AFTER})`; the Vercel AI SDK's
// `streamText` (@ai-sdk/openai's Responses model, which parses with eventsource-parser).
// Prints one JSON line: {"create": [texts], "retrieve": [texts], "retrieve_first_seq": n,
// "vercel": [texts]}, or throws.
import { createOpenAI } from "@ai-sdk/openai";
import { streamText } from "ai";
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

async function vercel() {
  const model = createOpenAI({ baseURL: process.env.BASE_URL, apiKey: "test-key" }).responses("countdown");
  const out = [];
  for await (const part of streamText({ model, prompt: input, maxRetries: 0 }).fullStream) {
    if (part.type === "error") throw part.error;
    if (part.type === "text-delta") out.push(part.text);
  }
  return out;
}

const [created, retrieved, vercelTexts] = await Promise.all([
  texts(await client.responses.create({ model: "countdown", input, stream: true })),
  (async () => {
    const bg = await client.responses.create({ model: "countdown", input, background: true });
    return texts(await client.responses.retrieve(bg.id, { stream: true, starting_after: after }));
  })(),
  vercel(),
]);
console.log(
  JSON.stringify({
    create: created.out,
    retrieve: retrieved.out,
    retrieve_first_seq: retrieved.first,
    vercel: vercelTexts,
  }),
);
