"""A client of jobq's HTTP API written with Python's standard library only, as a producer in
another language would write one. The Swift test `HTTPAPIProcessTests` runs it against a real
`jobq dashboard` process.

    python3 api_client.py BASE TOKEN enqueue-and-wait   # enqueue a sum, long-poll its result
    python3 api_client.py BASE TOKEN list               # a page of jobs
Prints one JSON object: what the client saw.
"""
import json
import sys
import urllib.error
import urllib.request


def call(base, token, method, path, body=None):
    data = None if body is None else json.dumps(body).encode("utf-8")
    request = urllib.request.Request(base + path, data=data, method=method)
    request.add_header("Authorization", "Bearer " + token)
    if body is not None:
        request.add_header("Content-Type", "application/json")
    try:
        with urllib.request.urlopen(request, timeout=90) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read())


def main():
    base, token, mode = sys.argv[1], sys.argv[2], sys.argv[3]
    if mode == "enqueue-and-wait":
        status, body = call(base, token, "POST", "/api/v1/jobs",
                            {"executor": "sum", "payload": {"a": 2, "b": 3}, "queue": "python"})
        if status != 201:
            print(json.dumps({"enqueue_status": status, "body": body}))
            return
        job_id = body["job"]["id"]
        # A long poll: 202 while the job runs, 200 once it is final.
        for _ in range(10):
            status, body = call(base, token, "GET", "/api/v1/jobs/%d/result?wait=30" % job_id)
            if status != 202:
                break
        print(json.dumps({"id": job_id, "status": status, "finished": body.get("finished"),
                          "state": body["job"]["state"], "result": body["job"]["result"]}))
    elif mode == "list":
        status, body = call(base, token, "GET", "/api/v1/jobs?limit=5")
        print(json.dumps({"status": status, "body": body}))
    else:
        raise SystemExit("unknown mode " + mode)


if __name__ == "__main__":
    main()
