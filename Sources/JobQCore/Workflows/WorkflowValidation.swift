/// Checks a workflow before anything is stored, naming the JSON path of the bad element
/// (`$.sequence[3].parallel[0]: ...`), the way the file format spells it.
package enum WorkflowValidation {
    /// The most steps one submission may hold.
    static let maximumSteps = 100_000
    /// The deepest nesting of groups.
    static let maximumDepth = 64

    /// Returns the number of steps.
    package static func validate(_ workflow: Workflow) throws(JobQueueError) -> Int {
        if let name = workflow.name { try Label.check(name, what: "$.name: a workflow name") }
        for key in workflow.context.keys.sorted() {
            do {
                try SharedWrite.validate(key)
            } catch {
                throw .invalidInput("$.context: \(error.description)")
            }
        }
        var steps = 0
        try check(workflow.root, path: "$", depth: 1, steps: &steps)
        return steps
    }

    private static func check(_ group: WorkflowGroup, path: String, depth: Int, steps: inout Int) throws(JobQueueError)
    {
        guard depth <= maximumDepth else {
            throw .invalidInput("\(path): groups nest deeper than \(maximumDepth) levels")
        }
        if let name = group.name { try Label.check(name, what: "\(path).name: a group name") }
        for (index, member) in group.members.enumerated() {
            let memberPath = "\(path).\(group.kind.rawValue)[\(index)]"
            switch member {
            case .group(let child):
                try check(child, path: memberPath, depth: depth + 1, steps: &steps)
            case .step(let step):
                steps += 1
                guard steps <= maximumSteps else {
                    throw .invalidInput(
                        "\(memberPath): a workflow may hold at most \(maximumSteps) steps; split it into several")
                }
                try check(step, path: memberPath, previousExists: group.kind == .sequence && index > 0)
            case .tree(let tree):
                steps += 1
                try TreeValidation.check(tree, member: memberPath, previousExists: group.kind == .sequence && index > 0)
            }
        }
    }

    private static func check(_ step: WorkflowStep, path: String, previousExists: Bool) throws(JobQueueError) {
        do {
            try step.request.validate()
        } catch {
            throw .invalidInput("\(path): \(error.description)")
        }
        let options = step.request.options
        if !options.after.isEmpty || options.lane != nil {
            throw .invalidInput(
                "\(path): a workflow step cannot use 'after' or 'lane'; its place in the workflow orders it")
        }
        if step.input == .previous {
            guard previousExists else {
                throw .invalidInput("\(path).input: 'previous' needs a member before this one in a sequence")
            }
            guard
                step.request.payloadJSON.drop(while: { $0 == " " || $0 == "\n" || $0 == "\t" || $0 == "\r" }).first
                    == "{"
            else {
                throw .invalidInput("\(path).payload: must be a JSON object to receive 'previous'")
            }
        }
    }
}
