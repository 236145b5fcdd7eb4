import Foundation

/// `shell`: runs a command and returns its exit code and output.
///
/// The command runs without a shell: `{"argv": ["convert", "in.png", "out.jpg"]}` passes each
/// argument as is, so nothing in the payload is interpreted by a shell. To use a shell's
/// features, ask for one explicitly: `{"script": "ls | wc -l"}` runs `/bin/sh -c SCRIPT`.
/// Optional: `"cwd"` (working directory), `"env"` (variables added to the worker's). The command
/// also sees `JOBQ_JOB_ID`, `JOBQ_ATTEMPT` and `JOBQ_QUEUE`.
///
/// The result is `{"exitCode": 0, "stdout": "...", "stderr": "...", "stdoutTruncated": false,
/// "stderrTruncated": false}`; each stream keeps its first ``outputLimit`` bytes. A non-zero
/// exit fails the attempt (the error carries the end of stderr). On cancellation or timeout
/// the process gets SIGTERM, then SIGKILL after ``terminationGrace``.
public struct ShellExecutor: Executor {
    public static let name = "shell"
    /// Bytes of stdout and of stderr kept in the result: 64 KiB each.
    public static let outputLimit = 64 * 1024
    public static let terminationGrace: Duration = .seconds(5)

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

    public init() {}

    public func run(_ input: Input, context: JobContext) async throws -> Output {
        let (executable, arguments) = try Self.command(input)
        var isDirectory: ObjCBool = false
        if let cwd = input.cwd, !(FileManager.default.fileExists(atPath: cwd, isDirectory: &isDirectory) && isDirectory.boolValue) {
            throw NonRetryableError("working directory '\(cwd)' does not exist")
        }
        // The job's identity is passed down so scripts can log it or make their work idempotent.
        let identity = [
            "JOBQ_JOB_ID": String(context.jobID), "JOBQ_ATTEMPT": String(context.attempt), "JOBQ_QUEUE": context.queue,
        ]
        let environment = ProcessInfo.processInfo.environment.merging(identity) { $1 }.merging(input.env ?? [:]) { $1 }
        // Output goes to files rather than pipes, so a chatty command can never block on a
        // full pipe while we wait for it to exit.
        let scratch = FileManager.default.temporaryDirectory.appendingPathComponent("jobq-shell-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let stdoutURL = scratch.appendingPathComponent("stdout")
        let stderrURL = scratch.appendingPathComponent("stderr")
        let child = try ChildProcess(
            executable: executable, arguments: arguments, environment: environment, directory: input.cwd,
            stdoutPath: stdoutURL.path, stderrPath: stderrURL.path)
        let status = await withTaskCancellationHandler {
            await child.wait()
        } onCancel: {
            child.signal(SIGTERM)
            Task {
                try? await Task.sleep(for: Self.terminationGrace)
                child.signal(SIGKILL)
            }
        }
        try Task.checkCancellation()

        let (stdout, stdoutTruncated) = Self.readPrefix(stdoutURL)
        let (stderr, stderrTruncated) = Self.readPrefix(stderrURL)
        guard status == 0 else {
            let tail = stderr.trimmingCharacters(in: .whitespacesAndNewlines).suffix(500)
            throw ExecutorFailure("command exited with status \(status)" + (tail.isEmpty ? "" : ": \(tail)"))
        }
        return Output(
            exitCode: status, stdout: stdout, stderr: stderr,
            stdoutTruncated: stdoutTruncated, stderrTruncated: stderrTruncated)
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
            throw NonRetryableError("shell payload needs 'argv' (e.g. [\"echo\", \"hi\"]) or 'script' (e.g. \"ls | wc -l\")")
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

    static func readPrefix(_ url: URL) -> (String, Bool) {
        guard let handle = try? FileHandle(forReadingFrom: url) else { return ("", false) }
        defer { try? handle.close() }
        let data = (try? handle.read(upToCount: outputLimit + 1)) ?? Data()
        let truncated = data.count > outputLimit
        return (String(decoding: data.prefix(outputLimit), as: UTF8.self), truncated)
    }
}
