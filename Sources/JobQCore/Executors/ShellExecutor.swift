import Foundation

/// `shell`: runs a command and returns its exit code and output.
///
/// The command runs without a shell: `{"argv": ["convert", "in.png", "out.jpg"]}` passes each
/// argument as is, so nothing in the payload is interpreted by a shell. To use a shell's
/// features, ask for one explicitly: `{"script": "ls | wc -l"}` runs `/bin/sh -c SCRIPT`.
/// Optional: `"cwd"` (working directory), `"env"` (variables added to the worker's). The command
/// also sees `JOBQ_JOB_ID`, `JOBQ_ATTEMPT` and `JOBQ_QUEUE`, but none of the worker's own
/// settings and secrets (`JOBQ_*` such as `JOBQ_DB` and `JOBQ_DASHBOARD_TOKEN`, `PGPASSWORD`,
/// `PGPASSFILE`) unless the job's `env` gives them.
///
/// The result is `{"exitCode": 0, "stdout": "...", "stderr": "...", "stdoutTruncated": false,
/// "stderrTruncated": false}`; each stream keeps its first ``outputLimit`` bytes, and the rest is
/// read and dropped (nothing is written to disk). A non-zero exit fails the attempt (the error
/// carries the end of stderr).
///
/// The command runs in a process group of its own. On cancellation or timeout the whole group
/// gets SIGTERM, then SIGKILL after ``terminationGrace-swift.property``; processes it leaves behind when it
/// exits (background commands) are ended the same way, and so are descendants that left the
/// group (`setsid`, a daemon), found by the `JOBQ_ATTEMPT_MARK` variable they inherit (one that
/// clears its whole environment escapes). The worker adopts and reaps them: none is left a
/// zombie. The executor returns only once none of them is left, so a retry never runs beside
/// the attempt before it. A command whose worker was killed outright is killed by the worker's
/// guardian the moment the worker is gone (see `CommandGuardian`).
///
/// A command runs as the worker's user, so it can read what that user can, the worker's
/// `/proc/PID/environ` among them: `jobq work` wipes its secrets from there once the store is
/// open (`WorkerSecrets`); an app that embeds a pool should keep secrets out of a process
/// that runs untrusted commands (a password file such as `PGPASSFILE` instead), or run them
/// as another user.
///
/// ```swift
/// let pool = WorkerPool(queue: queue, executors: [ShellExecutor(terminationGrace: .seconds(2))])
/// ```
public struct ShellExecutor: Executor {
    public static let name = "shell"
    /// Bytes of stdout and of stderr kept in the result: 64 KiB each.
    public static let outputLimit = 64 * 1024
    /// The default time a stopped command's group gets between SIGTERM and SIGKILL.
    public static let terminationGrace: Duration = .seconds(5)
    /// Variables of the worker's environment a command does not see unless its job's `env`
    /// names them: jobq's own settings and the PostgreSQL password's sources.
    public static func isWithheld(_ name: String) -> Bool {
        name.hasPrefix("JOBQ_") || name == "PGPASSWORD" || name == "PGPASSFILE"
    }

    public struct Input: Codable, Sendable {
        public var argv: [String]?
        public var script: String?
        public var cwd: String?
        public var env: [String: String]?

        public init(argv: [String]? = nil, script: String? = nil, cwd: String? = nil, env: [String: String]? = nil) {
            self.argv = argv
            self.script = script
            self.cwd = cwd
            self.env = env
        }
    }

    public struct Output: Codable, Sendable {
        public var exitCode: Int32
        public var stdout: String
        public var stderr: String
        public var stdoutTruncated: Bool
        public var stderrTruncated: Bool
    }

    /// The time a stopped command's group gets between SIGTERM and SIGKILL.
    public let terminationGrace: Duration

    public init(terminationGrace: Duration = ShellExecutor.terminationGrace) {
        self.terminationGrace = terminationGrace
    }

    public func run(_ input: Input, context: JobContext) async throws -> Output {
        let (executable, arguments) = try Self.command(input)
        var isDirectory: ObjCBool = false
        if let cwd = input.cwd,
            !(FileManager.default.fileExists(atPath: cwd, isDirectory: &isDirectory) && isDirectory.boolValue)
        {
            throw NonRetryableError("working directory '\(cwd)' does not exist")
        }
        // The job's identity is passed down so scripts can log it or make their work idempotent.
        let identity = [
            "JOBQ_JOB_ID": String(context.jobID), "JOBQ_ATTEMPT": String(context.attempt), "JOBQ_QUEUE": context.queue
        ]
        let inherited = ProcessInfo.processInfo.environment.filter { !Self.isWithheld($0.key) }
        let environment = inherited.merging(identity) { $1 }.merging(input.env ?? [:]) { $1 }
        let child = try ChildProcess(
            executable: executable, arguments: arguments, environment: environment, directory: input.cwd,
            output: .capture(limit: Self.outputLimit + 1, tail: 500))
        let grace = terminationGrace
        let status = await withTaskCancellationHandler {
            await child.wait()
        } onCancel: {
            child.signalGroup(SIGTERM)
            Task {
                await Descriptors.sleep(grace)
                child.signalGroup(SIGKILL)
            }
        }
        // Nothing of the attempt outlives it: what the command left in its group is ended too.
        await child.endGroup(grace: grace)
        let (stdout, stderr) = await child.output()
        try Task.checkCancellation()
        guard status == 0 else {
            let tail = String(decoding: stderr.tail, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            throw ExecutorFailure("command exited with status \(status)" + (tail.isEmpty ? "" : ": \(tail)"))
        }
        return Output(
            exitCode: status, stdout: Self.text(stdout), stderr: Self.text(stderr),
            stdoutTruncated: stdout.total > Self.outputLimit, stderrTruncated: stderr.total > Self.outputLimit)
    }

    static func text(_ stream: ChildProcess.Captured) -> String {
        StoredText.plain(String(decoding: stream.kept.prefix(outputLimit), as: UTF8.self))
    }

    static func command(_ input: Input) throws -> (String, [String]) {
        switch (input.argv, input.script) {
        case (let argv?, nil):
            guard let first = argv.first, !first.isEmpty else {
                throw NonRetryableError("'argv' must name a command, e.g. {\"argv\": [\"echo\", \"hello\"]}")
            }
            guard let path = resolve(first) else {
                throw NonRetryableError("command '\(first)' not found in PATH; give its full path or install it")
            }
            return (path, Array(argv.dropFirst()))
        case (nil, let script?):
            return ("/bin/sh", ["-c", script])
        case (.some, .some):
            throw NonRetryableError("give either 'argv' (no shell) or 'script' (run by /bin/sh), not both")
        case (nil, nil):
            throw NonRetryableError(
                "shell payload needs 'argv' (e.g. [\"echo\", \"hi\"]) or 'script' (e.g. \"ls | wc -l\")")
        }
    }

    /// Finds a command the way a shell would: as given if it has a slash, else in PATH.
    static func resolve(_ command: String) -> String? {
        if command.contains("/") { return FileManager.default.isExecutableFile(atPath: command) ? command : nil }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":") {
            let candidate = "\(directory)/\(command)"
            if FileManager.default.isExecutableFile(atPath: candidate) { return candidate }
        }
        return nil
    }

}

/// `shell` on a worker that does not run commands (`jobq work` on a PostgreSQL store without
/// `--allow-shell`): every attempt fails, saying so, and the job is retried (a worker that runs
/// commands may take it).
public struct ShellRefusal: Executor {
    public static let name = ShellExecutor.name
    /// Any payload.
    public struct Input: Codable, Sendable {
        public init(from decoder: any Decoder) throws {}
        public func encode(to encoder: any Encoder) throws {}
    }

    let reason: String

    /// - Parameter reason: Why this worker refuses, and what to do about it.
    public init(reason: String) { self.reason = reason }

    public func run(_ input: Input, context: JobContext) async throws -> String {
        throw ExecutorFailure(reason)
    }
}
