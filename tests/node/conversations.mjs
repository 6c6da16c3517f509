// The whole Conversations flow with the unmodified openai Node SDK, against BASE_URL.
// Every object is checked against the SDK's own TypeScript types (the fields each one
// requires, with their types); prints "ok" and exits 0, or throws.
import assert from "node:assert/strict";
import OpenAI from "openai";

const client = new OpenAI({ baseURL: process.env.BASE_URL, apiKey: "test-key", maxRetries: 0 });

function isConversation(c) {
  assert.equal(c.object, "conversation");
  assert.equal(typeof c.id, "string");
  assert.equal(typeof c.created_at, "number");
  assert.equal(typeof c.metadata, "object");
}
function isItem(i) {
  assert.equal(typeof i.id, "string");
  assert.equal(typeof i.type, "string");
  if (i.type === "message") {
    assert.ok(["user", "assistant", "system", "developer"].includes(i.role));
    assert.ok(["in_progress", "completed", "incomplete"].includes(i.status));
    assert.ok(Array.isArray(i.content));
    for (const part of i.content) assert.equal(typeof part.text, "string");
  }
}
function isList(page) {
  // A page of the SDK keeps the body it was parsed from; an items.create answer is the body.
  const body = page.body ?? page;
  assert.equal(body.object, "list");
  assert.equal(typeof body.has_more, "boolean");
  assert.ok(Array.isArray(body.data));
  if (body.data.length) {
    assert.equal(body.first_id, body.data[0].id);
    assert.equal(body.last_id, body.data.at(-1).id);
  }
  body.data.forEach(isItem);
}
const text = (i) => i.content.map((c) => c.text).join("");

async function walk(convId, order, limit) {
  const items = [];
  let pages = 0;
  let page = await client.conversations.items.list(convId, { order, limit });
  for (;;) {
    pages += 1;
    isList(page);
    items.push(...page.data);
    if (!page.has_more) return { items, pages };
    page = await client.conversations.items.list(convId, { order, limit, after: page.data.at(-1).id });
  }
}

const conv = await client.conversations.create({
  items: [
    { type: "message", role: "user", content: "one" },
    { type: "message", role: "user", content: [{ type: "input_text", text: "two" }] },
  ],
  metadata: { topic: "numbers" },
});
isConversation(conv);
assert.match(conv.id, /^conv_/);
assert.deepEqual(await client.conversations.retrieve(conv.id), conv);

const replies = [];
for (const word of ["three", "four", "five"]) {
  const r = await client.responses.create({ model: "any", input: word, conversation: conv.id });
  assert.equal(r.object, "response");
  assert.equal(r.conversation.id, conv.id);
  replies.push(r.output_text);
}
assert.deepEqual(replies, ["echo: three (turn 3)", "echo: four (turn 4)", "echo: five (turn 5)"]);

const expected = ["one", "two", "three", replies[0], "four", replies[1], "five", replies[2]];
const asc = await walk(conv.id, "asc", 3);
assert.deepEqual(asc.items.map(text), expected);
assert.equal(asc.pages, 3);
const desc = await walk(conv.id, "desc", 2);
assert.deepEqual(desc.items.map(text), [...expected].reverse());
// The SDK's own auto-pagination.
const auto = [];
for await (const item of client.conversations.items.list(conv.id, { order: "asc", limit: 2 })) auto.push(item.id);
assert.deepEqual(auto, asc.items.map((i) => i.id));
const one = await client.conversations.items.retrieve(asc.items[2].id, { conversation_id: conv.id });
isItem(one);
assert.equal(text(one), "three");

const added = await client.conversations.items.create(conv.id, {
  items: [{ type: "message", role: "user", content: "six" }],
});
isList(added);
const r = await client.responses.create({ model: "any", input: "seven", conversation: conv.id });
assert.equal(r.output_text, "echo: seven (turn 7)");
const all = await walk(conv.id, "asc", 100);
assert.deepEqual(all.items.map(text).slice(-3), ["six", "seven", "echo: seven (turn 7)"]);

const updated = await client.conversations.update(conv.id, { metadata: { topic: "more" } });
isConversation(updated);
assert.deepEqual(updated.metadata, { topic: "more" });
isConversation(await client.conversations.items.delete(all.items[0].id, { conversation_id: conv.id }));
const deleted = await client.conversations.delete(conv.id);
assert.deepEqual(deleted, { id: conv.id, object: "conversation.deleted", deleted: true });
await assert.rejects(client.conversations.retrieve(conv.id), (e) => e.status === 404);
console.log("ok");
