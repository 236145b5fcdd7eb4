/// The HTTP API described as OpenAPI 3.1, served at `/api/v1/openapi.json`. Each operation
/// names the token scope it needs (`x-jobq-scope`, absent: any valid token); a test checks
/// that its paths, methods and scopes are exactly ``HTTPAPI/endpoints``.
enum APIDocument {
    static let json = """
        {
          "openapi": "3.1.0",
          "info": {
            "title": "jobq",
            "version": "1",
            "description": "A durable job queue's HTTP API. Every request carries a token made with `jobq token add NAME --scope read,enqueue,operate` as `Authorization: Bearer SECRET`: 401 without a valid one, 403 without the operation's scope. Bodies are JSON (`Content-Type: application/json`): a job at most 2 MiB, a batch at most 1,000 jobs and 16 MiB (413 past that). Errors are {\\"error\\": {\\"status\\", \\"message\\", \\"field\\"}}, the field naming what was wrong where there is one."
          },
          "security": [{"bearer": []}],
          "paths": {
            "/api/v1/openapi.json": {
              "get": {
                "summary": "This document.",
                "responses": {"200": {"description": "The OpenAPI document."}, "401": {"$ref": "#/components/responses/Error"}}
              }
            },
            "/api/v1/jobs": {
              "post": {
                "summary": "Enqueue a job.",
                "description": "The body is a job as `jobq enqueue --file` reads a line: `executor` (required), `payload` (any JSON, 1 MiB at most), `queue`, `priority`, `maxAttempts`, `delay` (\\"30s\\") or `runAt` (ISO 8601), `timeout`, `name`, `batch`, `after` (job ids), `onDependencyFailure`, `lane`, `laneOnFailure`, `unique` (a key, or {\\"key\\", \\"for\\", \\"states\\"}), `partition`, `expireAfter`. A unique key that a job holds returns that job (200, `existed`: true) instead of a new one: the idempotency key of a retried request.",
                "x-jobq-scope": "enqueue",
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/JobRequest"}}}},
                "responses": {
                  "201": {"description": "Enqueued.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Enqueued"}}}},
                  "200": {"description": "A job already holds the request's unique key; nothing was enqueued.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Enqueued"}}}},
                  "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "413": {"$ref": "#/components/responses/Error"}, "415": {"$ref": "#/components/responses/Error"}
                }
              },
              "get": {
                "summary": "A page of jobs, newest first.",
                "x-jobq-scope": "read",
                "parameters": [
                  {"name": "where", "in": "query", "description": "The filter language of `jobq list --where`, e.g. `state:dead /customer = \\"acme\\" finished<24h`.", "schema": {"type": "string"}},
                  {"name": "limit", "in": "query", "schema": {"type": "integer", "minimum": 1, "maximum": 1000, "default": 50}},
                  {"name": "before", "in": "query", "description": "The `next` of the previous page.", "schema": {"type": "integer", "minimum": 1}}
                ],
                "responses": {
                  "200": {"description": "The page, and the cursor of the next one (null after the last).", "content": {"application/json": {"schema": {"type": "object", "required": ["jobs", "next"], "properties": {"jobs": {"type": "array", "items": {"$ref": "#/components/schemas/Job"}}, "next": {"type": ["integer", "null"]}}}}}},
                  "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}
                }
              }
            },
            "/api/v1/jobs/batch": {
              "post": {
                "summary": "Enqueue up to 1,000 jobs in one transaction: all of them, or (on any error) none.",
                "x-jobq-scope": "enqueue",
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["jobs"], "properties": {"jobs": {"type": "array", "minItems": 1, "maxItems": 1000, "items": {"$ref": "#/components/schemas/JobRequest"}}}}}}},
                "responses": {
                  "201": {"description": "Each job, in the order sent.", "content": {"application/json": {"schema": {"type": "object", "required": ["jobs"], "properties": {"jobs": {"type": "array", "items": {"$ref": "#/components/schemas/Enqueued"}}}}}}},
                  "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "413": {"$ref": "#/components/responses/Error"}, "415": {"$ref": "#/components/responses/Error"}
                }
              }
            },
            "/api/v1/jobs/{id}": {
              "get": {
                "summary": "A job.",
                "x-jobq-scope": "read",
                "parameters": [{"$ref": "#/components/parameters/JobID"}],
                "responses": {
                  "200": {"description": "The job.", "content": {"application/json": {"schema": {"type": "object", "required": ["job"], "properties": {"job": {"$ref": "#/components/schemas/Job"}}}}}},
                  "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}
                }
              }
            },
            "/api/v1/jobs/{id}/result": {
              "get": {
                "summary": "A job once it is final (succeeded, dead or cancelled), waiting up to `wait` seconds for it (a long poll).",
                "x-jobq-scope": "read",
                "parameters": [
                  {"$ref": "#/components/parameters/JobID"},
                  {"name": "wait", "in": "query", "schema": {"type": "integer", "minimum": 0, "maximum": 60, "default": 0}}
                ],
                "responses": {
                  "200": {"description": "The job is final: its `state`, and its `result` or `error`.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Outcome"}}}},
                  "202": {"description": "Not final yet after `wait`: ask again.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Outcome"}}}},
                  "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "503": {"$ref": "#/components/responses/Error"}
                }
              }
            },
            "/api/v1/jobs/{id}/retry": {
              "post": {
                "summary": "Run a failed, dead or cancelled job again now.",
                "x-jobq-scope": "operate",
                "parameters": [{"$ref": "#/components/parameters/JobID"}],
                "responses": {
                  "200": {"description": "The job, ready.", "content": {"application/json": {"schema": {"type": "object", "required": ["job"], "properties": {"job": {"$ref": "#/components/schemas/Job"}}}}}},
                  "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}
                }
              }
            },
            "/api/v1/jobs/{id}/cancel": {
              "post": {
                "summary": "Cancel an unfinished job; a running one is stopped by its worker, in whatever process.",
                "x-jobq-scope": "operate",
                "parameters": [{"$ref": "#/components/parameters/JobID"}],
                "responses": {
                  "200": {"description": "The job, cancelled.", "content": {"application/json": {"schema": {"type": "object", "required": ["job"], "properties": {"job": {"$ref": "#/components/schemas/Job"}}}}}},
                  "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}
                }
              }
            },
            "/api/v1/jobs/{id}/signals": {
              "post": {
                "summary": "Send a signal to a durable function: one waiting for it resumes; one that has not reached its wait takes it when it does.",
                "x-jobq-scope": "enqueue",
                "parameters": [{"$ref": "#/components/parameters/JobID"}],
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["name"], "additionalProperties": false, "properties": {"name": {"type": "string", "minLength": 1}, "payload": {}}}}}},
                "responses": {
                  "201": {"description": "Sent.", "content": {"application/json": {"schema": {"type": "object", "required": ["signal", "wokeJob"], "properties": {"signal": {"type": "integer"}, "wokeJob": {"type": "boolean"}}}}}},
                  "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}, "404": {"$ref": "#/components/responses/Error"}, "409": {"$ref": "#/components/responses/Error"}
                }
              }
            },
            "/api/v1/queues/{name}/pause": {
              "post": {
                "summary": "Stop claims of a queue's jobs (running ones finish).",
                "x-jobq-scope": "operate",
                "parameters": [{"$ref": "#/components/parameters/QueueName"}],
                "responses": {"200": {"$ref": "#/components/responses/QueueState"}, "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}}
              }
            },
            "/api/v1/queues/{name}/resume": {
              "post": {
                "summary": "Claim a paused queue's jobs again.",
                "x-jobq-scope": "operate",
                "parameters": [{"$ref": "#/components/parameters/QueueName"}],
                "responses": {"200": {"$ref": "#/components/responses/QueueState"}, "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}}
              }
            },
            "/api/v1/history": {
              "get": {
                "summary": "What the workers did over a window, bucket by bucket: attempts by outcome, cancellations, wait and run times (p50, p95, longest, in seconds), and the backlog by state.",
                "x-jobq-scope": "read",
                "parameters": [
                  {"name": "window", "in": "query", "description": "How far back, from 1m to 31d (`1h`, `24h`, `7d`).", "schema": {"type": "string", "default": "1h"}},
                  {"name": "buckets", "in": "query", "description": "Buckets in the window, each at least a minute long.", "schema": {"type": "integer", "minimum": 1, "maximum": 1440, "default": 60}},
                  {"name": "queue", "in": "query", "schema": {"type": "string"}},
                  {"name": "executor", "in": "query", "schema": {"type": "string"}}
                ],
                "responses": {
                  "200": {"description": "The history, oldest bucket first.", "content": {"application/json": {"schema": {"type": "object", "required": ["start", "bucketSeconds", "buckets"], "properties": {"start": {"type": "string", "format": "date-time"}, "bucketSeconds": {"type": "number"}, "queue": {"type": ["string", "null"]}, "executor": {"type": ["string", "null"]}, "buckets": {"type": "array", "items": {"type": "object"}}}}}}},
                  "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}
                }
              }
            },
            "/api/v1/events": {
              "post": {
                "summary": "Emit an event: its triggers enqueue their jobs, and durable functions waiting for it resume, in one transaction.",
                "x-jobq-scope": "enqueue",
                "requestBody": {"required": true, "content": {"application/json": {"schema": {"type": "object", "required": ["name"], "additionalProperties": false, "properties": {"name": {"type": "string", "minLength": 1}, "payload": {}, "dedupe": {"type": "string", "description": "An emit with the same key within 24 hours makes nothing and returns that emit's jobs."}}}}}},
                "responses": {
                  "201": {"$ref": "#/components/responses/Emitted"},
                  "200": {"$ref": "#/components/responses/Emitted"},
                  "400": {"$ref": "#/components/responses/Error"}, "401": {"$ref": "#/components/responses/Error"}, "403": {"$ref": "#/components/responses/Error"}
                }
              }
            }
          },
          "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "description": "A secret from `jobq token add`."}},
            "parameters": {
              "JobID": {"name": "id", "in": "path", "required": true, "schema": {"type": "integer", "minimum": 1}},
              "QueueName": {"name": "name", "in": "path", "required": true, "schema": {"type": "string"}}
            },
            "responses": {
              "Error": {"description": "What was wrong and what to do.", "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}},
              "QueueState": {"description": "The queue and whether it is paused.", "content": {"application/json": {"schema": {"type": "object", "required": ["queue", "paused"], "properties": {"queue": {"type": "string"}, "paused": {"type": "boolean"}}}}}},
              "Emitted": {"description": "The jobs the event's triggers made (201), or, for a repeated dedupe key, that emit's (200).", "content": {"application/json": {"schema": {"type": "object", "required": ["deduplicated", "jobs", "resumedFunctions"], "properties": {"deduplicated": {"type": "boolean"}, "jobs": {"type": "array", "items": {"$ref": "#/components/schemas/Job"}}, "resumedFunctions": {"type": "array", "items": {"type": "integer"}}}}}}}
            },
            "schemas": {
              "JobRequest": {"type": "object", "required": ["executor"], "properties": {"executor": {"type": "string"}, "payload": {}, "queue": {"type": "string"}, "priority": {"type": "integer"}, "maxAttempts": {"type": "integer", "minimum": 1}, "delay": {"type": "string"}, "runAt": {"type": "string", "format": "date-time"}, "timeout": {"type": "string"}, "name": {"type": "string"}, "batch": {"type": "string"}, "after": {"type": "array"}, "onDependencyFailure": {"enum": ["cancel", "fail", "ignore", "run"]}, "lane": {"type": "string"}, "laneOnFailure": {"enum": ["continue", "halt"]}, "unique": {}, "partition": {"type": "string"}, "expireAfter": {"type": "string"}}},
              "Enqueued": {"type": "object", "required": ["existed", "job"], "properties": {"existed": {"type": "boolean", "description": "A job already held the unique key: it is returned, and nothing was enqueued."}, "job": {"$ref": "#/components/schemas/Job"}}},
              "Outcome": {"type": "object", "required": ["finished", "job"], "properties": {"finished": {"type": "boolean"}, "job": {"$ref": "#/components/schemas/Job"}}},
              "Job": {"type": "object", "description": "A job as `jobq list --json` prints it (the CommandLine article's \\"A job as JSON\\").", "required": ["id", "queue", "executor", "state", "payload", "attempt", "maxAttempts", "createdAt"], "properties": {"id": {"type": "integer"}, "queue": {"type": "string"}, "executor": {"type": "string"}, "state": {"enum": ["waiting", "scheduled", "ready", "running", "succeeded", "failed", "dead", "cancelled"]}, "priority": {"type": "integer"}, "payload": {}, "result": {}, "error": {"type": ["string", "null"]}, "attempt": {"type": "integer"}, "maxAttempts": {"type": "integer"}, "runAt": {"type": "string", "format": "date-time"}, "createdAt": {"type": "string", "format": "date-time"}, "startedAt": {"type": ["string", "null"], "format": "date-time"}, "finishedAt": {"type": ["string", "null"], "format": "date-time"}}},
              "Error": {"type": "object", "required": ["error"], "properties": {"error": {"type": "object", "required": ["status", "message"], "properties": {"status": {"type": "integer"}, "message": {"type": "string"}, "field": {"type": "string", "description": "The field, parameter or key at fault, where there is one."}}}}}
            }
          }
        }
        """
}
