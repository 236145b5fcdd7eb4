import Foundation
import Testing

@Suite("Packaging: docker, completion scripts, version")
struct PackagingTests {
    static func read(_ path: String) throws -> String {
        try String(contentsOf: ReadmeTests.root.appendingPathComponent(path), encoding: .utf8)
    }

    /// The one line in `text` that starts with `prefix` (after indentation), without a trailing
    /// line continuation.
    static func lines(_ text: String, startingWith prefix: String) -> [String] {
        text.split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }
            .map { $0.hasPrefix("RUN ") ? String($0.dropFirst(4)) : $0 }
            .filter { $0.hasPrefix(prefix) }
            .map { $0.replacingOccurrences(of: " \\", with: "").trimmingCharacters(in: .whitespaces) }
    }

    @Test func dockerfileAndReadmesAgreeOnTheBuildCommands() throws {
        let dockerfile = try Self.read("docker/Dockerfile")
        let dockerReadme = try Self.read("docker/README.md")
        let readme = try Self.read("README.md")

        let swiftBuild = try #require(Self.lines(dockerfile, startingWith: "swift build -c release").first)
        #expect(swiftBuild == "swift build -c release --product jobq --traits Postgres,Dashboard --static-swift-stdlib")
        #expect(readme.contains(swiftBuild), "README's release build is the one the Dockerfile runs")
        #expect(dockerReadme.contains(swiftBuild))

        let documented = Set(
            Self.lines(dockerReadme, startingWith: "docker build ") + Self.lines(readme, startingWith: "docker build "))
        let inDockerfile = Set(
            Self.lines(dockerfile, startingWith: "#   docker build ").map { String($0.dropFirst(4)) })
        #expect(documented.contains("docker build -f docker/Dockerfile -t jobq ."))
        #expect(inDockerfile == ["docker build -f docker/Dockerfile -t jobq ."])
        #expect(readme.contains("docker build -f docker/Dockerfile -t jobq ."))
    }

    @Test func dockerfileRunsJobqAsANonRootWorkerOnTheDataVolume() throws {
        let dockerfile = try Self.read("docker/Dockerfile")
        #expect(dockerfile.contains(#"ENTRYPOINT ["jobq"]"#), "exec form, so SIGTERM reaches jobq")
        #expect(dockerfile.contains(#"CMD ["work"]"#))
        #expect(dockerfile.contains("ENV JOBQ_DB=/data/jobq.sqlite"))
        #expect(dockerfile.contains(#"VOLUME ["/data"]"#))
        #expect(dockerfile.contains("HEALTHCHECK") && dockerfile.contains(#"CMD ["jobq", "status"]"#))
        let user = try #require(Self.lines(dockerfile, startingWith: "USER ").last)
        #expect(user != "USER root" && user != "USER 0")
        #expect(dockerfile.components(separatedBy: "\nFROM ").count == 3, "two stages: build and runtime")

        let ignore = try Self.read(".dockerignore")
        #expect(ignore.split(separator: "\n").contains(".build"))

        let compose = try Self.read("docker/compose.yaml")
        #expect(compose.contains("condition: service_completed_successfully"))
        #expect(compose.contains(#"command: ["migrate", "up"]"#))
        #expect(
            compose.components(separatedBy: "jobq-data:/data").count == 4,
            "migrate, worker and dashboard share the volume")
    }

    @Test(arguments: ["bash", "zsh", "fish"])
    func completionScriptsAreGenerated(shell: String) async throws {
        let result = try await CLI.run(["--generate-completion-script", shell], db: nil)
        #expect(result.status == 0)
        #expect(result.stdout.contains("jobq"))
        #expect(result.stdout.contains("enqueue"))
    }

    @Test func requireMigratedRefusesAnOldStore() async throws {
        let store = try MigrationTests.oldStore()
        let refused = try await CLI.run(["--require-migrated", "status"], db: store.path)
        #expect(refused.status == 2)
        #expect(refused.stderr.contains("jobq migrate up"))
        #expect(try await CLI.run(["migrate", "up"], db: store.path).status == 0)
        #expect(try await CLI.run(["--require-migrated", "status"], db: store.path).status == 0)
    }

    @Test func fuzzCorpusReplaysWithoutACrash() async throws {
        let fuzz = CLI.binary.deletingLastPathComponent().appendingPathComponent("jobq-fuzz")
        let scratch = TestScratch.url("jobq-fuzz")
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: scratch) }
        let corpus = ReadmeTests.root.appendingPathComponent("Tests/Fuzz/corpus").path
        let child = try Child(
            executable: fuzz, arguments: ["replay", corpus], environment: [:],
            stdoutPath: scratch.appendingPathComponent("out").path,
            stderrPath: scratch.appendingPathComponent("err").path)
        await child.wait()
        #expect(child.terminationStatus == 0)
        #expect(
            try String(contentsOfFile: scratch.appendingPathComponent("out").path, encoding: .utf8).contains(
                "without a crash"))
    }
}
