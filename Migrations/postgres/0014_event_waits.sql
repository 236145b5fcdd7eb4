-- Durable functions wait for emitted events. A wait for an event is a step of kind 'event'
-- (`name`: the event's name) whose `filter` (the filter language, over the event's payload;
-- NULL: any payload) says which emits it takes. An emit of the event ends every such wait still
-- open whose filter matches, its payload as the wait's result, in the emit's transaction. The
-- same table as the SQLite store's version 19. (The table is `steps` in the store's schema, so
-- PostgreSQL named its CHECK `steps_kind_check`.)
ALTER TABLE jobq_steps DROP CONSTRAINT steps_kind_check;
ALTER TABLE jobq_steps ADD CONSTRAINT steps_kind_check
    CHECK (kind IN ('step', 'sleep', 'signal', 'event', 'call'));
ALTER TABLE jobq_steps ADD COLUMN filter text;

-- The open waits for an event, by the event's name: what an emit reads to find them.
CREATE INDEX jobq_steps_open_event_waits ON jobq_steps (name) WHERE kind = 'event' AND finished_at IS NULL;
