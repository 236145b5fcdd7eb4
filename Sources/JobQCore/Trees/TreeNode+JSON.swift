import Foundation

extension WorkflowFileParser {
    static let treeMemberKeys: Set<String> = ["tree", "maxJobs", "input"]
    static let treeNodeKeys: Set<String> = [
        "executor", "name", "payload", "each", "with", "onFailure", "children", "queue", "priority", "maxAttempts",
        "timeout"
    ]

    /// A tree member of a workflow file:
    ///
    /// ```json
    /// {"tree": {"executor": "cookbook", "payload": "a-cookbook", "children": [
    ///     {"executor": "recipe", "each": "/recipeIDs", "with": {"api": "https://example.com"},
    ///      "onFailure": "continue", "children": [{"executor": "image", "each": "/imageIDs"}]}]},
    ///  "maxJobs": 5000}
    /// ```
    ///
    /// `payload` is the root's input (only the root has one); `each` (not on the root) is a
    /// JSON Pointer into the parent's result; `input: "previous"` merges the previous member's
    /// result into the root's input.
    func tree(_ fields: [String: JSONValue], path: String) throws(JobQueueError) -> JobTree {
        if let unknown = fields.keys.sorted().first(where: { !Self.treeMemberKeys.contains($0) }) {
            throw .invalidInput(
                "\(path).\(unknown): unknown key beside a tree; it may have \(Self.treeMemberKeys.sorted().joined(separator: ", "))"
            )
        }
        guard case .object(let rootFields) = fields["tree"] else {
            throw .invalidInput(
                "\(path).tree: must be a node object like {\"executor\": \"cookbook\", \"children\": [...]}")
        }
        let rootPath = "\(path).tree"
        if rootFields["each"] != nil {
            throw .invalidInput("\(rootPath).each: the root runs once, on the tree's input; 'each' is for child nodes")
        }
        var inputJSON = "{}"
        if let payload = rootFields["payload"] {
            do {
                inputJSON = String(decoding: try JSONEncoder.jobq.encode(payload), as: UTF8.self)
            } catch {
                throw .invalidInput("\(rootPath).payload: cannot be encoded as JSON")
            }
        }
        var tree = JobTree(try node(rootFields, path: rootPath, isRoot: true), inputJSON: inputJSON)
        if let value = fields["maxJobs"] {
            guard case .integer(let number) = value, let maxJobs = Int(exactly: number) else {
                throw .invalidInput("\(path).maxJobs: must be a whole number, e.g. 5000")
            }
            tree.maxJobs = maxJobs
        }
        if let value = fields["input"] {
            guard case .string(let text) = value, let parsed = WorkflowStep.Input(rawValue: text) else {
                throw .invalidInput("\(path).input: must be \"previous\" or \"payload\"")
            }
            tree.input = parsed
        }
        try TreeValidation.checkAlone(tree, member: path)
        return tree
    }

    private func node(_ fields: [String: JSONValue], path: String, isRoot: Bool) throws(JobQueueError) -> TreeNode {
        if let unknown = fields.keys.sorted().first(where: { !Self.treeNodeKeys.contains($0) }) {
            throw .invalidInput(
                "\(path).\(unknown): unknown key in a tree node; a node has \(Self.treeNodeKeys.sorted().joined(separator: ", "))"
            )
        }
        if !isRoot, fields["payload"] != nil {
            throw .invalidInput(
                "\(path).payload: only the root has a payload; a child's input comes from its parent's result (add constants with 'with')"
            )
        }
        let executor = try executor(fields, path: path)
        var node = TreeNode(executor: executor)
        if let value = fields["name"] {
            guard case .string(let name) = value else { throw .invalidInput("\(path).name: must be a string") }
            node.name = name
        }
        if let value = fields["each"] {
            guard case .string(let each) = value else {
                throw .invalidInput("\(path).each: must be a JSON Pointer string like \"/recipeIDs\"")
            }
            node.each = each
        }
        if let value = fields["with"] {
            guard case .object(let with) = value else { throw .invalidInput("\(path).with: must be a JSON object") }
            node.with = with
        }
        if let value = fields["onFailure"] {
            guard case .string(let text) = value, let policy = TreeNode.FailurePolicy(rawValue: text) else {
                throw .invalidInput("\(path).onFailure: must be \"failTree\" or \"continue\"")
            }
            node.onFailure = policy
        }
        // Queue, priority, attempts and timeout read as a job line's do.
        var jobFields = fields.filter { ["queue", "priority", "maxAttempts", "timeout"].contains($0.key) }
        jobFields["executor"] = .string(executor)
        do {
            node.options = try JobRequest(fields: jobFields, keys: JobRequest.stepKeys).options
        } catch {
            throw .invalidInput("\(path): \(error.description)")
        }
        if let value = fields["children"] {
            guard case .array(let items) = value else {
                throw .invalidInput("\(path).children: must be an array of nodes")
            }
            for (index, item) in items.enumerated() {
                guard case .object(let childFields) = item else {
                    throw .invalidInput(
                        "\(path).children[\(index)]: must be a node object like {\"executor\": \"recipe\", \"each\": \"/recipeIDs\"}"
                    )
                }
                node.children.append(try self.node(childFields, path: "\(path).children[\(index)]", isRoot: false))
            }
        }
        return node
    }
}
