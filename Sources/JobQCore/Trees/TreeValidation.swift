import Foundation

/// Checks a job tree before anything is stored, naming the path of the bad element the way
/// the workflow file spells it (`$.sequence[1].tree.children[0].each: ...`).
enum TreeValidation {
    /// The most nodes one tree may define.
    static let maximumNodes = 1_000
    /// The deepest a tree may nest.
    static let maximumDepth = 64
    /// The highest `maxJobs` a tree may ask for.
    static let maximumJobs = 10_000_000

    /// Checks a tree that is the workflow member at `member` (its root node at `member.tree`).
    static func check(_ tree: JobTree, member: String, previousExists: Bool) throws(JobQueueError) {
        try checkAlone(tree, member: member)
        if tree.input == .previous {
            guard previousExists else {
                throw .invalidInput("\(member).input: 'previous' needs a member before this one in a sequence")
            }
            guard tree.inputJSON.drop(while: { $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "\r" }).first == "{"
            else {
                throw .invalidInput("\(member).tree.payload: must be a JSON object to receive 'previous'")
            }
        }
    }

    /// Everything that does not depend on the tree's place in a workflow; the file parser
    /// checks this, so that a lone tree's errors name the paths of the file.
    static func checkAlone(_ tree: JobTree, member: String) throws(JobQueueError) {
        let path = "\(member).tree"
        guard (1...maximumJobs).contains(tree.maxJobs) else {
            throw .invalidInput("\(member).maxJobs: must be from 1 to \(maximumJobs), got \(tree.maxJobs)")
        }
        guard tree.root.nodeCount <= maximumNodes else {
            throw .invalidInput(
                "\(path): a tree may define at most \(maximumNodes) nodes, this one has \(tree.root.nodeCount)")
        }
        if tree.root.each != nil {
            throw .invalidInput("\(path).each: the root runs once, on the tree's input; 'each' is for child nodes")
        }
        if tree.root.with != nil {
            throw .invalidInput(
                "\(path).with: the root's input is the tree's input; put its constants there ('with' is for child nodes)"
            )
        }
        do {
            _ = try JobRequest(executor: tree.root.executor, payloadJSON: tree.inputJSON)
        } catch {
            throw .invalidInput("\(path).payload: \(error.description)")
        }
        try check(tree.root, path: path, depth: 1)
    }

    private static func check(_ node: TreeNode, path: String, depth: Int) throws(JobQueueError) {
        guard depth <= maximumDepth else {
            throw .invalidInput("\(path): a tree may nest at most \(maximumDepth) levels")
        }
        try Label.check(node.name, what: "\(path).name: a node name")
        guard !node.name.contains("/") else {
            throw .invalidInput("\(path).name: a node name must not contain '/', got '\(Label.shown(node.name))'")
        }
        if let each = node.each {
            do {
                _ = try JSONPointer(each)
            } catch {
                throw .invalidInput("\(path).each: \(error.description)")
            }
        }
        let options = node.options
        if options.runAt != nil || !options.after.isEmpty || options.lane != nil || options.batch != nil {
            throw .invalidInput(
                "\(path): a tree node's jobs take queue, priority, maxAttempts and timeout; not runAt, after, lane or batch"
            )
        }
        do {
            try JobRequest(executor: node.executor, payloadJSON: "{}", options: options).validate()
        } catch {
            throw .invalidInput("\(path): \(error.description)")
        }
        var names: Set<String> = []
        for (index, child) in node.children.enumerated() {
            let childPath = "\(path).children[\(index)]"
            guard names.insert(child.name).inserted else {
                throw .invalidInput(
                    "\(childPath).name: two children of '\(node.name)' are named '\(child.name)'; give one another name"
                )
            }
            try check(child, path: childPath, depth: depth + 1)
        }
    }
}
