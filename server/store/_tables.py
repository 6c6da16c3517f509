"""The one SQL schema, shared by both dialects (SQLite and PostgreSQL).

Invariant: this module and the newest Alembic revision in `migrations/versions/` describe the
same schema; `tests/store/test_migrations.py` compares them. Every table that belongs to a
response is keyed by `response_id` first, so one response's rows are one index range.

Tables:
- `responses`: one row per stored response: status, the normalized request, lease.
- `input_items`: the response's input, in order (`position`).
- `output_items`: closed output items (`response.output_item.done`), by `output_index`.
- `events`: the outbox: every SSE event of a response, by gap-free sequence number; a row holds
  one event or a run of a write's consecutive events, keyed by the last one's (`_events`).
- `checkpoints`: workflow checkpoints, ordered by the host's own `seq` (never by the
  framework's `iteration_count` or timestamps), each committed with the events before it.
- `pending_requests`: human-in-the-loop requests a paused workflow waits on.
- `conversations`: conversation ids, one namespace per user; their metadata, and when one
  was deleted (a deleted id is never reused).
- `conversation_items`: items added to a conversation by hand (`POST .../items`, or created
  with it), in order (`seq`); `response_id` is the turn that took them as its input.
- `conversation_hidden_items`: items of a conversation's turns deleted from its item list.
- `webhook_events`: one row per webhook event (`evt_...`), committed with the terminal event
  of the background response it reports.
- `webhook_deliveries`: one row per event and endpoint: attempts, the next one, its lease.
- `takeovers`: one row per recovery of a response: when, by which replica, from which checkpoint.
- `journal`: the model and tool calls of a response's current superstep (a plain agent's: of
  its run), so a re-run after a crash replays them instead of calling again (migration 0007).
- `checkpoint_log`: one row per checkpoint ever committed (a trigger on `checkpoints` writes it,
  migration 0005), kept when old checkpoints are pruned: which superstep paired what.
- `app_versions`: each version of each app a replica has served, with its manifest (what the
  version is made of), so a refusal can say what changed between two versions.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    false,
)

metadata = MetaData()

# SQLite only auto-increments an INTEGER PRIMARY KEY; PostgreSQL wants BIGINT.
_BigId = BigInteger().with_variant(Integer(), "sqlite")

responses = Table(
    "responses",
    metadata,
    Column("id", String(128), primary_key=True),
    Column("user_id", String(256), nullable=False),
    Column("status", String(16), nullable=False),
    Column("background", Boolean, nullable=False),
    Column("stream", Boolean, nullable=False),
    Column("delivery", String(8), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("completed_at", Float, nullable=True),
    Column("previous_response_id", String(128), nullable=True),
    Column("conversation_id", String(128), nullable=True),
    Column("request", Text, nullable=False),
    Column("request_hash", String(64), nullable=False),
    Column("error", Text, nullable=True),
    Column("incomplete_details", Text, nullable=True),
    Column("usage", Text, nullable=True),
    Column("cancel_requested", Boolean, nullable=False, default=False),
    Column("lease_owner", String(200), nullable=True),
    Column("lease_expires_at", Float, nullable=True),
    # How many times recovery has taken this response over (a bound against resume loops).
    Column("recovery_count", Integer, nullable=False, server_default="0"),
    # The app and the replica that created it (the lease owner is cleared when it ends).
    Column("app", String(256), nullable=True),
    Column("created_by", String(200), nullable=True),
    # The version of the app that made it (its checkpoints are that version's too): only a
    # replica running a compatible version resumes or continues it (migration 0006).
    Column("app_version", String(64), nullable=True),
    # JSON: the creating request's W3C trace context and each life's run span (`tracing`).
    Column("trace_context", Text, nullable=True),
    # JSON: the journal's counts over every life (`{"recorded", "replayed", "rerun"}`).
    Column("journal", Text, nullable=True),
)
Index("ix_responses_created_at", responses.c.created_at)
Index("ix_responses_active_lease", responses.c.status, responses.c.lease_expires_at)
Index(
    "ix_responses_conversation",
    responses.c.user_id,
    responses.c.conversation_id,
    responses.c.created_at,
)

input_items = Table(
    "input_items",
    metadata,
    Column("response_id", String(128), primary_key=True),
    Column("position", Integer, primary_key=True, autoincrement=False),
    Column("item_id", String(128), nullable=False),
    Column("data", Text, nullable=False),
)
Index("ix_input_items_item_id", input_items.c.response_id, input_items.c.item_id)
Index("ix_input_items_by_item_id", input_items.c.item_id)

output_items = Table(
    "output_items",
    metadata,
    Column("response_id", String(128), primary_key=True),
    Column("output_index", Integer, primary_key=True, autoincrement=False),
    Column("item_id", String(128), nullable=False),
    Column("status", String(16), nullable=False),
    # False for items a crash interrupted (live mode): closed `incomplete`, left out of output.
    Column("included", Boolean, nullable=False),
    Column("data", Text, nullable=False),
)
# An item_reference names an item by its id alone (`Store.find_items`).
Index("ix_output_items_by_item_id", output_items.c.item_id)

events = Table(
    "events",
    metadata,
    Column("response_id", String(128), primary_key=True),
    Column("seq", Integer, primary_key=True, autoincrement=False),
    Column("type", String(64), nullable=False),
    Column("data", Text, nullable=False),
    # Events in the row, `seq` the last one's; their text compressed (migration 0008).
    Column("size", Integer, nullable=False, server_default="1"),
    Column("packed", LargeBinary, nullable=True),
)

checkpoints = Table(
    "checkpoints",
    metadata,
    Column("seq", _BigId, primary_key=True, autoincrement=True),
    Column("checkpoint_id", String(128), nullable=False, unique=True),
    Column("user_id", String(256), nullable=False),
    Column("lineage", String(300), nullable=False),
    Column("response_id", String(128), nullable=False),
    Column("workflow_name", String(256), nullable=False),
    # The response's last event sequence number committed with (or before) this checkpoint.
    Column("event_seq", Integer, nullable=False),
    Column("data", Text, nullable=False),
    Column("created_at", Float, nullable=False),
    # Saved by a run that had restored a checkpoint and not yet delivered its request's input:
    # recovery from it delivers the input again (`resume.Resumer._plan`).
    Column("awaits_input", Boolean, nullable=False, server_default=false()),
)
Index("ix_checkpoints_lineage", checkpoints.c.lineage, checkpoints.c.workflow_name, checkpoints.c.seq)
Index("ix_checkpoints_response", checkpoints.c.response_id, checkpoints.c.seq)

pending_requests = Table(
    "pending_requests",
    metadata,
    Column("response_id", String(128), primary_key=True),
    Column("call_id", String(128), primary_key=True),
    Column("user_id", String(256), nullable=False),
    Column("checkpoint_id", String(128), nullable=False),
    Column("status", String(16), nullable=False),
    Column("answered_by", String(128), nullable=True),
    Column("data", Text, nullable=False),
)

Index("ix_pending_requests_answered_by", pending_requests.c.answered_by)

conversations = Table(
    "conversations",
    metadata,
    Column("user_id", String(256), primary_key=True),
    Column("id", String(128), primary_key=True),
    Column("created_at", Float, nullable=False),
    Column("metadata", Text, nullable=False, server_default="{}"),
    Column("deleted_at", Float, nullable=True),
)

conversation_items = Table(
    "conversation_items",
    metadata,
    Column("seq", _BigId, primary_key=True, autoincrement=True),
    Column("user_id", String(256), nullable=False),
    Column("conversation_id", String(128), nullable=False),
    Column("item_id", String(128), nullable=False),
    Column("data", Text, nullable=False),
    Column("created_at", Float, nullable=False),
    # The turn that took this item as its input (NULL: not yet; a claim whose response was
    # never committed is taken again after a while, see `conversations.ConversationStore`).
    Column("response_id", String(128), nullable=True),
    Column("claimed_at", Float, nullable=True),
)
Index("ix_conversation_items_conv", conversation_items.c.user_id, conversation_items.c.conversation_id)
Index("ix_conversation_items_response", conversation_items.c.response_id)

conversation_hidden_items = Table(
    "conversation_hidden_items",
    metadata,
    Column("user_id", String(256), primary_key=True),
    Column("conversation_id", String(128), primary_key=True),
    Column("item_id", String(128), primary_key=True),
)

webhook_events = Table(
    "webhook_events",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("response_id", String(128), nullable=False),
    Column("type", String(64), nullable=False),
    Column("created_at", Float, nullable=False),
    Column("data", Text, nullable=False),  # the payload, exactly the body sent
)
Index("ix_webhook_events_response", webhook_events.c.response_id)

webhook_deliveries = Table(
    "webhook_deliveries",
    metadata,
    Column("event_id", String(64), primary_key=True),
    Column("endpoint", String(2048), primary_key=True),
    Column("status", String(16), nullable=False),  # pending | delivered | failed
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("next_attempt_at", Float, nullable=False),
    Column("lease_owner", String(200), nullable=True),
    Column("lease_expires_at", Float, nullable=True),
    Column("last_error", Text, nullable=True),
    Column("delivered_at", Float, nullable=True),
)
Index("ix_webhook_deliveries_due", webhook_deliveries.c.status, webhook_deliveries.c.next_attempt_at)

takeovers = Table(
    "takeovers",
    metadata,
    Column("response_id", String(128), primary_key=True),
    Column("attempt", Integer, primary_key=True, autoincrement=False),
    Column("at", Float, nullable=False),
    Column("owner", String(200), nullable=False),
    Column("previous_owner", String(200), nullable=True),
    Column("checkpoint_id", String(128), nullable=True),
    Column("span_id", String(16), nullable=True),
)

# Written by the trigger `checkpoint_log_on_insert` (migration 0005) in the transaction of
# every checkpoint insert: what each superstep paired outlives the pruning of checkpoints.
checkpoint_log = Table(
    "checkpoint_log",
    metadata,
    Column("response_id", String(128), primary_key=True),
    Column("seq", BigInteger, primary_key=True, autoincrement=False),
    Column("checkpoint_id", String(128), nullable=False),
    Column("workflow_name", String(256), nullable=False),
    Column("event_seq", Integer, nullable=False),
    Column("bytes", BigInteger, nullable=False),
    Column("created_at", Float, nullable=False),
)

app_versions = Table(
    "app_versions",
    metadata,
    Column("app", String(256), primary_key=True),
    Column("version", String(64), primary_key=True),
    Column("manifest", Text, nullable=False),  # JSON: executors, edges, types; or name, tools
    Column("first_seen", Float, nullable=False),
)

# Appended through the outbox with the events of the same run (fenced, in order); a superstep's
# rows are deleted with the checkpoint that follows it, a plain agent's with the end.
journal = Table(
    "journal",
    metadata,
    Column("seq", _BigId, primary_key=True, autoincrement=True),
    Column("response_id", String(128), nullable=False),
    Column("checkpoint_id", String(128), nullable=False),
    Column("executor", String(256), nullable=False),
    Column("place", String(256), nullable=False),
    Column("state", String(8), nullable=False),
    Column("digest", String(64), nullable=False),
    Column("data", Text, nullable=False),
    Column("created_at", Float, nullable=False),
)
Index("ix_journal_response", journal.c.response_id, journal.c.seq)

ALL_TABLES = (
    responses,
    input_items,
    output_items,
    events,
    checkpoints,
    pending_requests,
    conversations,
    conversation_items,
    conversation_hidden_items,
    webhook_events,
    webhook_deliveries,
    takeovers,
    checkpoint_log,
    app_versions,
    journal,
)
