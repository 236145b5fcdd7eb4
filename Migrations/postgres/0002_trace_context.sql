-- The trace context of the code that enqueued the job (what the process's tracing instrument
-- injects, e.g. W3C traceparent and tracestate), as a JSON object of strings; NULL when no
-- tracer was bootstrapped or no span was active. Workers continue the trace from it.
ALTER TABLE jobs ADD COLUMN trace_context text;
