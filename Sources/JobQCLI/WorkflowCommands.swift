import ArgumentParser
import Foundation
import JobQ
import JobQCommandLine

struct WorkflowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "workflow",
        abstract: "Submit, inspect and cancel workflows: nested sequence and parallel groups of jobs.",
        discussion: helpText(
            """
            jobq workflow submit nightly.json --context '{"region": "eu"}'
            jobq workflow submit nightly.json --wait --wait-timeout 10m   # prints its final result
            jobq workflow show 1
            jobq workflow list --state running
            jobq workflow cancel 1 [--group NAME|PATH]
            jobq wait --workflow 1

            A workflow file is a group: {"sequence": [...]} or {"parallel": [...]}, with optional
            "name", "context" and "onFailure" ("fail" or "continue"). Members are steps (a job:
            {"executor": "sum", "payload": {...}, "name": "n", "queue": "q", "input": "previous"})
            or groups, to any depth.
            """),
        subcommands: [
            WorkflowSubmitCommand.self, WorkflowShowCommand.self, WorkflowListCommand.self, WorkflowCancelCommand.self
        ])
}

struct WorkflowSubmitCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "submit",
        abstract: "Store a workflow file (all of it in one transaction, or nothing) and print its id.")

    @OptionGroup var store: StoreOptions
    @Argument(help: "The workflow file (JSON); - reads standard input.") var file: String

    @Option(help: ArgumentHelp("Keys merged over the file's \"context\" (a JSON object).", valueName: "json"))
    var context: String?

    @Flag(help: "Accept executor names that are not built in (for steps run by your own WorkerPool).")
    var anyExecutor = false

    @OptionGroup var result: ResultWaitOptions

    func run() async throws {
        let limit = try result.limit()
        let text: String
        do {
            let data =
                file == "-"
                ? FileHandle.standardInput.readDataToEndOfFile() : try Data(contentsOf: URL(fileURLWithPath: file))
            guard let decoded = String(data: data, encoding: .utf8) else {
                throw CLIError.usage("\(file) is not valid UTF-8 text")
            }
            text = decoded
        } catch let error as CLIError {
            throw error
        } catch {
            throw CLIError.usage("cannot read \(file): \(error.localizedDescription)")
        }
        var workflow: Workflow
        do {
            workflow = try Workflow(json: text, knownExecutors: anyExecutor ? nil : Set(BuiltinExecutors.names))
            if let context {
                guard case .object(let extra) = try JSONDecoder().decode(JSONValue.self, from: Data(context.utf8))
                else {
                    throw CLIError.usage("--context must be a JSON object, e.g. '{\"region\": \"eu\"}'")
                }
                workflow.context.merge(extra) { _, new in new }
            }
        } catch let error as JobQueueError {
            throw CLIError.usage(
                anyExecutor || !error.description.contains("unknown executor")
                    ? error.description
                    : error.description + ". If your own WorkerPool registers it, pass --any-executor")
        } catch is DecodingError {
            throw CLIError.usage("--context is not valid JSON; give a JSON object, e.g. '{\"region\": \"eu\"}'")
        }
        let queue = try await store.open()
        let id = try await queue.submit(workflow)
        guard result.wait else { return print(id) }
        // The final result: a sequence's last member's, a parallel group's as an array, a tree's root job's.
        try await result.printResult(within: limit) { try await queue.resultJSON(ofWorkflow: id, timeout: $0) }
    }
}

struct WorkflowShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "Draw a workflow's groups as a tree with each step's state, times and result.",
        discussion:
            "A job tree is drawn as its nodes with their jobs counted by state; --jobs draws every job of it instead.")

    @OptionGroup var store: StoreOptions
    @Argument(help: "The workflow's id.") var id: Int64
    @Flag(help: "Print one JSON object.") var json = false
    @Flag(help: "Draw each job of a job tree, under the job whose success created it.") var jobs = false

    func run() async throws {
        guard let workflow = try await store.open().workflow(id) else {
            throw CLIError(
                message: "no workflow with id \(id); list workflows with `jobq workflow list`", exitCode: .notFound)
        }
        if json {
            print(workflow.json)
            return
        }
        var header =
            "workflow \(workflow.id)" + (workflow.name.map { " \"\($0)\"" } ?? "") + ": \(workflow.state.rawValue)"
        header += ", created \(isoString(workflow.createdAt))"
        if let finished = workflow.finishedAt { header += ", finished \(isoString(finished))" }
        print(header)
        if let error = workflow.error { print("error: \(error)") }
        if workflow.contextJSON != "{}" { print("context: \(workflow.contextJSON)") }
        let trees = jobs ? [:] : Dictionary(uniqueKeysWithValues: workflow.trees.map { ($0.group, $0) })
        for line in Self.tree(workflow.root, trees: trees) { print(line) }
    }

    /// The group and its members, one per line, drawn with box characters; a job tree in
    /// `trees` (by its group) as its nodes.
    static func tree(
        _ group: WorkflowStatus.Group, trees: [Int64: TreeStatus] = [:], prefix: String = "", isLast: Bool = true,
        isRoot: Bool = true
    ) -> [String] {
        let branch = isRoot ? "" : (isLast ? "└─ " : "├─ ")
        if let tree = trees[group.id] {
            return nodes(tree, state: group.state, prefix: prefix, branch: branch, isLast: isLast, isRoot: isRoot)
        }
        let counts = group.counts
        var line =
            "\(group.kind.rawValue)" + (group.name.map { " \"\($0)\"" } ?? "")
            + " \(group.path)  \(group.state.rawValue)"
        line += "  \(counts.succeeded + counts.failed + counts.cancelled)/\(counts.total) done"
        if counts.failed > 0 { line += ", \(counts.failed) failed" }
        if counts.cancelled > 0 { line += ", \(counts.cancelled) cancelled" }
        if group.onFailure == .continue, group.kind != .tree { line += "  (onFailure: continue)" }
        var lines = [prefix + branch + line]
        let childPrefix = isRoot ? "" : prefix + (isLast ? "   " : "│  ")
        for (index, member) in group.members.enumerated() {
            let last = index == group.members.count - 1
            switch member {
            case .group(let child):
                lines += tree(child, trees: trees, prefix: childPrefix, isLast: last, isRoot: false)
            case .job(let job):
                lines.append(childPrefix + (last ? "└─ " : "├─ ") + step(job))
            }
        }
        return lines
    }

    /// A job tree as its nodes, each with its jobs by state: `recipe  each /recipeIDs  3 jobs: 2 done, 1 running`.
    static func nodes(
        _ tree: TreeStatus, state: WorkflowState, prefix: String, branch: String, isLast: Bool, isRoot: Bool
    ) -> [String] {
        var lines = [
            prefix + branch
                + "tree \(tree.nodes.first?.path ?? "")  \(state.rawValue)  \(tree.jobsCreated) of at most \(tree.maxJobs) jobs"
        ]
        let base = isRoot ? "" : prefix + (isLast ? "   " : "│  ")
        let children = Dictionary(grouping: tree.nodes) { $0.parentID ?? 0 }
        func draw(_ node: TreeStatus.Node, prefix: String, isLast: Bool) {
            var line = prefix + (isLast ? "└─ " : "├─ ") + node.name
            if let each = node.each { line += "  each \(each.isEmpty ? "\"\"" : each)" }
            line += "  " + jobCounts(node.jobs)
            if node.onFailure == .continue { line += "  (onFailure: continue)" }
            lines.append(line)
            let below = children[node.id] ?? []
            for (index, child) in below.enumerated() {
                draw(child, prefix: prefix + (isLast ? "   " : "│  "), isLast: index == below.count - 1)
            }
        }
        if let root = tree.nodes.first { draw(root, prefix: base, isLast: true) }
        return lines
    }

    /// "12 jobs: 9 done, 2 running, 1 failed"
    static func jobCounts(_ jobs: [JobState: Int]) -> String {
        let total = jobs.values.reduce(0, +)
        guard total > 0 else { return "no jobs yet" }
        var parts = ["\(jobs[.succeeded, default: 0]) done"]
        let running = jobs[.running, default: 0]
        let pending =
            jobs[.ready, default: 0] + jobs[.scheduled, default: 0] + jobs[.waiting, default: 0]
            + jobs[.failed, default: 0]
        if running > 0 { parts.append("\(running) running") }
        if pending > 0 { parts.append("\(pending) to run") }
        if let dead = jobs[.dead], dead > 0 { parts.append("\(dead) failed") }
        if let cancelled = jobs[.cancelled], cancelled > 0 { parts.append("\(cancelled) cancelled") }
        return "\(total) job\(total == 1 ? "" : "s"): " + parts.joined(separator: ", ")
    }

    static func step(_ job: Job) -> String {
        var line = "job \(job.id) \(job.executor)" + (job.name.map { " \"\($0)\"" } ?? "") + "  \(job.state.rawValue)"
        if let started = job.startedAt {
            line += "  started \(isoString(started))"
            if let finished = job.finishedAt, job.state == .succeeded {
                line += String(format: " (%.3fs)", finished.timeIntervalSince(started))
            }
        }
        if let result = job.resultJSON { line += "  " + summary(result) }
        if let error = job.error, job.state != .succeeded { line += "  error: " + summary(error) }
        return line
    }

    static func summary(_ text: String) -> String {
        text.count <= 60 ? text : String(text.prefix(57)) + "..."
    }
}

struct WorkflowListCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "list", abstract: "List workflows, newest first.")

    @OptionGroup var store: StoreOptions
    @Option(help: "Only workflows in this state: running, succeeded, failed, cancelled.") var state: String?
    @Option(help: "At most this many.") var limit: Int = 50
    @Flag(help: "Print JSON Lines: one workflow per line.") var json = false

    func run() async throws {
        let filter: WorkflowState?
        do { filter = try state.map { try WorkflowState(parsing: $0) } } catch {
            throw CLIError.usage("--state: \(error)")
        }
        guard limit >= 0 else { throw CLIError.usage("--limit must not be negative, got \(limit)") }
        let workflows = try await store.open().workflows(state: filter, limit: limit)
        if json {
            for workflow in workflows { print(workflow.jsonLine) }
            return
        }
        guard !workflows.isEmpty else {
            print(
                "no workflows" + (filter.map { " \($0.rawValue)" } ?? "")
                    + "; submit one with `jobq workflow submit FILE.json`")
            return
        }
        var rows = [["ID", "NAME", "STATE", "STEPS", "CREATED", "ERROR"]]
        for workflow in workflows {
            let steps = workflow.stepCounts.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(
                separator: ", ")
            rows.append([
                String(workflow.id), workflow.name ?? "-", workflow.state.rawValue, steps,
                isoString(workflow.createdAt),
                workflow.error.map(WorkflowShowCommand.summary) ?? ""
            ])
        }
        print(Table.render(rows))
    }
}

struct WorkflowCancelCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cancel",
        abstract: "Cancel a running workflow, or one of its groups: running steps are cancelled, the rest dropped.")

    @OptionGroup var store: StoreOptions
    @Argument(help: "The workflow's id.") var id: Int64
    @Option(
        help: ArgumentHelp(
            "Only this group: its name, or its path as `workflow show` prints it.", valueName: "name|path"))
    var group: String?

    func run() async throws {
        let workflow = try await store.open().cancelWorkflow(id, group: group)
        if let group {
            print("group \(group) of workflow \(id) cancelled; the workflow is \(workflow.state.rawValue)")
        } else {
            print("workflow \(id) cancelled")
        }
    }
}

struct LaneCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "lane",
        abstract: "Inspect and resume lanes: jobs appended with `enqueue --lane NAME` run one at a time, in order.",
        subcommands: [LaneShowCommand.self, LaneResumeCommand.self])
}

struct LaneShowCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "show", abstract: "List a lane's jobs in append order.")

    @OptionGroup var store: StoreOptions
    @Argument(help: "The lane's name.") var name: String
    @Flag(help: "Print JSON Lines: the lane, then one job per line.") var json = false

    func run() async throws {
        guard let lane = try await store.open().lane(name) else {
            throw CLIError(
                message:
                    "no lane named '\(name)'; a lane is created by the first job appended to it (`jobq enqueue ... --lane \(name)`)",
                exitCode: .notFound)
        }
        if json {
            print(
                "{\"lane\":\(jsonString(lane.name)),\"onFailure\":\"\(lane.onFailure.rawValue)\",\"haltedBy\":\(lane.haltedBy.map(String.init) ?? "null")}"
            )
            for job in lane.jobs { print(job.jsonLine) }
            return
        }
        print(
            "lane \(lane.name): on failure \(lane.onFailure.rawValue)"
                + (lane.haltedBy.map { ", HALTED by job \($0) (`jobq lane resume \(lane.name)`)" } ?? ""))
        var rows = [["ID", "EXECUTOR", "STATE", "STARTED", "FINISHED", "ERROR"]]
        for job in lane.jobs {
            rows.append([
                String(job.id), job.executor, job.state.rawValue, job.startedAt.map(isoString) ?? "",
                job.finishedAt.map(isoString) ?? "",
                job.error.map(WorkflowShowCommand.summary) ?? ""
            ])
        }
        print(Table.render(rows))
    }

    func jsonString(_ text: String) -> String {
        String(decoding: (try? JSONEncoder().encode(text)) ?? Data("\"\"".utf8), as: UTF8.self)
    }
}

struct LaneResumeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "resume", abstract: "Let a halted lane run its next job.")

    @OptionGroup var store: StoreOptions
    @Argument(help: "The lane's name.") var name: String

    func run() async throws {
        let lane = try await store.open().resumeLane(name)
        print("lane \(lane.name) resumed")
    }
}
