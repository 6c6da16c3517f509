// The Vercel AI SDK's generateObject (a zod schema, @ai-sdk/openai's Responses model) against
// BASE_URL: prints the object it returns as one JSON line, or throws.
import { createOpenAI } from "@ai-sdk/openai";
import { generateObject } from "ai";
import { z } from "zod";

const provider = createOpenAI({ baseURL: process.env.BASE_URL, apiKey: "test-key" });
const { object, finishReason } = await generateObject({
  model: provider.responses("fake-model"),
  schema: z.object({ city: z.string(), days: z.number().int() }),
  schemaName: "Trip",
  prompt: "plan a trip",
  maxRetries: 0,
});
if (finishReason !== "stop") throw new Error(`finishReason ${finishReason}`);
console.log(JSON.stringify(object));
