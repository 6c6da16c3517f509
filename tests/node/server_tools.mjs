// A turn in which the server ran a tool, read by unmodified Node clients against BASE_URL (the
// tools example: "lookup_order order_id=A1" runs `lookup_order` on the server):
// the Vercel AI SDK's generateText and streamText (@ai-sdk/openai's Responses model) and the
// openai Node SDK (create and stream). Each completes the turn, its final text holds the tool's
// result, and no client is asked to run a tool it did not declare. Prints "ok" or throws.
import assert from "node:assert/strict";
import { createOpenAI } from "@ai-sdk/openai";
import { generateText, streamText } from "ai";
import OpenAI from "openai";

const BASE_URL = process.env.BASE_URL;
const RESULT = "order A1 shipped on 2026-11-30";
const PROMPT = "lookup_order order_id=A1";

const provider = createOpenAI({ baseURL: BASE_URL, apiKey: "test-key" });
const model = provider.responses("fake-model");

// generateText: one step (the SDK runs nothing itself), the tool shown as provider-executed.
{
  const result = await generateText({ model, prompt: PROMPT, maxRetries: 0 });
  assert.equal(result.finishReason, "stop", JSON.stringify(result.response?.body ?? {}).slice(0, 500));
  assert.equal(result.steps.length, 1);
  assert.ok(result.text.includes(RESULT), result.text);
  const calls = result.content.filter((p) => p.type === "tool-call");
  const results = result.content.filter((p) => p.type === "tool-result");
  assert.equal(calls.length, 1);
  assert.equal(calls[0].providerExecuted, true);
  assert.equal(calls[0].toolName, "mcp.lookup_order");
  assert.equal(results.length, 1);
  assert.equal(results[0].output?.output ?? results[0].result?.output, RESULT);
}

// streamText: the call and its result stream before the text that follows; no error part.
{
  const result = streamText({ model, prompt: PROMPT, maxRetries: 0 });
  const order = [];
  for await (const part of result.fullStream) {
    if (part.type === "error") throw part.error;
    if (["tool-call", "tool-result", "text-delta"].includes(part.type)) {
      if (order.at(-1) !== part.type) order.push(part.type);
    }
  }
  assert.deepEqual(order, ["tool-call", "tool-result", "text-delta"]);
  const text = await result.text;
  assert.ok(text.includes(RESULT), text);
  assert.equal((await result.steps).length, 1);
  assert.equal(await result.finishReason, "stop");
}

// The openai Node SDK: create, then stream.
const client = new OpenAI({ baseURL: BASE_URL, apiKey: "test-key", maxRetries: 0 });
{
  const response = await client.responses.create({ model: "fake-model", input: PROMPT });
  assert.equal(response.status, "completed");
  assert.deepEqual(response.output.map((i) => i.type), ["mcp_call", "message"]);
  const [call] = response.output;
  assert.equal(call.name, "lookup_order");
  assert.equal(call.output, RESULT);
  assert.deepEqual(JSON.parse(call.arguments), { order_id: "A1" });
  assert.ok(response.output_text.includes(RESULT), response.output_text);
}
{
  const stream = client.responses.stream({ model: "fake-model", input: PROMPT });
  const done = [];
  for await (const event of stream) {
    if (event.type === "response.output_item.done") done.push(event.item.type);
  }
  const response = await stream.finalResponse();
  assert.deepEqual(done, ["mcp_call", "message"]);
  assert.ok(!response.output.some((i) => i.type === "function_call"));
  assert.ok(response.output_text.includes(RESULT), response.output_text);
}
console.log("ok");
