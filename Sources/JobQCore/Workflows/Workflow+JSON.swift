import Foundation

extension Workflow {
    /// Parses a workflow file (the format of `jobq workflow submit`):
    ///
    /// ```json
    /// {"name": "nightly", "context": {"region": "eu"},
    ///  "sequence": [
    ///    {"executor": "sum", "payload": {"a": 1, "b": 2}},
    ///    {"parallel": [{"executor": "sleep", "payload": {"seconds": 1}}, {"executor": "echo"}],
    ///     "onFailure": "continue", "name": "fan-out"},
    ///    {"executor": "echo", "payload": {}, "input": "previous"}]}
    /// ```
    ///
    /// A step has the keys of a job line (`executor`, `payload`, `queue`, `priority`,
    /// `maxAttempts`, `timeout`, `delay`, `runAt`, `name`, `batch`) and `input` (`"previous"`
    /// merges the previous member's result into its payload). A group is `{"sequence": [...]}` or
    /// `{"parallel": [...]}` with optional `onFailure` (`fail`, `continue`) and `name`. The top
    /// level is a group (or a single step) with optional `name` and `context`. Errors name the
    /// JSON path of the bad element, e.g. `$.sequence[3].parallel[0].executor: unknown executor 'sm'`.
    ///
    /// - Parameters:
    ///   - json: The workflow file's text.
    ///   - knownExecutors: When given, steps naming another executor are refused.
    public init(json: String, knownExecutors: Set<String>? = nil) throws(JobQueueError) {
        let value: JSONValue
        do {
            value = try JSONDecoder.jobq.decode(JSONValue.self, from: Data(json.utf8))
        } catch {
            throw .invalidInput("$: not valid JSON: \(JSONText.describe(error))")
        }
        guard case .object(var fields) = value else {
            throw .invalidInput(
                "$: expected a JSON object like {\"sequence\": [{\"executor\": \"sum\", \"payload\": {\"a\": 1, \"b\": 2}}]}"
            )
        }
        let parser = WorkflowFileParser(knownExecutors: knownExecutors)
        var context: [String: JSONValue] = [:]
        if let value = fields.removeValue(forKey: "context") {
            guard case .object(let object) = value else { throw .invalidInput("$.context: must be a JSON object") }
            context = object
        }
        // The top group's name names the workflow; a lone step's name is its job's; beside a
        // lone tree, `name` names the workflow.
        var workflowName: String?
        if fields["tree"] != nil, let value = fields.removeValue(forKey: "name") {
            guard case .string(let text) = value else { throw .invalidInput("$.name: must be a string") }
            workflowName = text
        }
        switch try parser.node(.object(fields), path: "$") {
        case .group(let group): self.init(name: group.name, context: context, root: group)
        case .step(let step): self.init(context: context, root: WorkflowGroup(.sequence, [.step(step)]))
        case .tree(let tree):
            self.init(name: workflowName, context: context, root: WorkflowGroup(.sequence, [.tree(tree)]))
        }
    }
}

/// Reads groups and steps of a workflow file, naming the path of whatever is wrong.
struct WorkflowFileParser {
    let knownExecutors: Set<String>?

    static let groupKeys: Set<String> = ["sequence", "parallel", "onFailure", "name"]

    func node(_ value: JSONValue, path: String) throws(JobQueueError) -> WorkflowNode {
        guard case .object(let fields) = value else {
            throw .invalidInput(
                "\(path): expected a step {\"executor\": ...}, a group {\"sequence\": [...]} / {\"parallel\": [...]} or a tree {\"tree\": {...}}"
            )
        }
        if fields["tree"] != nil { return .tree(try tree(fields, path: path)) }
        let kinds = [WorkflowGroup.Kind.sequence, .parallel].filter { fields[$0.rawValue] != nil }
        guard let kind = kinds.first else { return .step(try step(fields, path: path)) }
        guard kinds.count == 1 else {
            throw .invalidInput("\(path): a group is either a sequence or a parallel group, not both")
        }
        if let unknown = fields.keys.sorted().first(where: { !Self.groupKeys.contains($0) }) {
            throw .invalidInput(
                "\(path).\(unknown): unknown key in a group; a group has \(Self.groupKeys.sorted().joined(separator: ", "))"
            )
        }
        guard case .array(let items) = fields[kind.rawValue] else {
            throw .invalidInput("\(path).\(kind.rawValue): must be an array of steps and groups")
        }
        var members: [WorkflowNode] = []
        for (index, item) in items.enumerated() {
            members.append(try node(item, path: "\(path).\(kind.rawValue)[\(index)]"))
        }
        var policy = WorkflowGroup.FailurePolicy.fail
        if let value = fields["onFailure"] {
            guard case .string(let text) = value, let parsed = WorkflowGroup.FailurePolicy(rawValue: text) else {
                throw .invalidInput("\(path).onFailure: must be \"fail\" or \"continue\"")
            }
            policy = parsed
        }
        var name: String?
        if let value = fields["name"] {
            guard case .string(let text) = value else { throw .invalidInput("\(path).name: must be a string") }
            name = text
        }
        return .group(WorkflowGroup(kind, members, onFailure: policy, name: name))
    }

    /// The `executor` of a step or tree node, refused when missing or (with `knownExecutors`)
    /// unknown.
    func executor(_ fields: [String: JSONValue], path: String) throws(JobQueueError) -> String {
        guard case .string(let executor) = fields["executor"] else {
            throw .invalidInput("\(path).executor: missing or not a string")
        }
        if let knownExecutors, !knownExecutors.contains(executor) {
            throw .invalidInput(
                "\(path).executor: unknown executor '\(executor)'; known executors are: \(knownExecutors.sorted().joined(separator: ", "))"
            )
        }
        return executor
    }

    private func step(_ fields: [String: JSONValue], path: String) throws(JobQueueError) -> WorkflowStep {
        var fields = fields
        var input = WorkflowStep.Input.payload
        if let value = fields.removeValue(forKey: "input") {
            guard case .string(let text) = value, let parsed = WorkflowStep.Input(rawValue: text) else {
                throw .invalidInput("\(path).input: must be \"previous\" or \"payload\"")
            }
            input = parsed
        }
        if let unknown = fields.keys.sorted().first(where: { !JobRequest.stepKeys.contains($0) }) {
            let hint =
                ["after", "lane", "onDependencyFailure", "laneOnFailure"].contains(unknown)
                ? "a workflow step is ordered by its place in the workflow"
                : "a step has \((JobRequest.stepKeys.union(["input"])).sorted().joined(separator: ", "))"
            throw .invalidInput("\(path).\(unknown): unknown key in a step; \(hint)")
        }
        _ = try executor(fields, path: path)
        do {
            return WorkflowStep(try JobRequest(fields: fields, keys: JobRequest.stepKeys), input: input)
        } catch {
            throw .invalidInput("\(path): \(error.description)")
        }
    }
}
