import Foundation
import GRDB
import Synchronization
import Testing

@testable import JobQCore
@testable import JobQSQL
@testable import JobQSQLite

/// The seed's cookbook, with fixed ids: 3 recipes; recipe rN has N%2+1 images and N+1
/// ingredients (2 to 4); each ingredient has 1 or 2 images.
enum Cookbook {
    struct Book: Executor {
        static let name = "cookbook"
        struct Output: Codable, Sendable { var recipeIDs: [String] }
        func run(_ input: String, context: JobContext) async throws -> Output { Output(recipeIDs: ["r1", "r2", "r3"]) }
    }

    struct Recipe: Executor {
        static let name = "recipe"
        struct Output: Codable, Sendable {
            var id: String
            var imageIDs: [String]
            var ingredientIDs: [String]
        }
        func run(_ input: String, context: JobContext) async throws -> Output {
            let n = Int(input.dropFirst()) ?? 0
            return Output(
                id: input, imageIDs: (1...(n % 2 + 1)).map { "\(input)-img\($0)" },
                ingredientIDs: (1...(n + 1)).map { "\(input)-ing\($0)" })
        }
    }

    struct Ingredient: Executor {
        static let name = "ingredient"
        struct Output: Codable, Sendable {
            var id: String
            var imageIDs: [String]
        }
        func run(_ input: String, context: JobContext) async throws -> Output {
            Output(id: input, imageIDs: (1...(input.utf8.count % 2 + 1)).map { "\(input)-img\($0)" })
        }
    }

    struct Image: Executor {
        static let name = "image"
        struct Output: Codable, Sendable { var image: String }
        func run(_ input: String, context: JobContext) async throws -> Output { Output(image: input) }
    }

    static let executors: [any Executor] = [Book(), Recipe(), Ingredient(), Image()] + BuiltinExecutors.all

    static var tree: TreeNode {
        TreeNode(Book.self) {
            TreeNode(Recipe.self, each: "/recipeIDs") {
                TreeNode(Image.self, name: "recipeImage", each: "/imageIDs")
                TreeNode(Ingredient.self, each: "/ingredientIDs") {
                    TreeNode(Image.self, name: "ingredientImage", each: "/imageIDs")
                }
            }
        }
    }
}

@Suite("Job trees")
struct TreeTests {
    func run(_ queue: JobQueue, executors: [any Executor] = Cookbook.executors) async throws {
        try await work(queue, executors: executors, concurrency: 4)
    }

    /// Every job in a status group and the groups below it.
    func jobs(in group: WorkflowStatus.Group) -> [Job] {
        group.members.flatMap { member -> [Job] in
            switch member {
            case .job(let job): [job]
            case .group(let child): jobs(in: child)
            }
        }
    }

    /// The tree group whose first job is `job`.
    func group(of job: JobID, in group: WorkflowStatus.Group) -> WorkflowStatus.Group? {
        if case .job(let first)? = group.members.first, first.id == job, group.kind == .tree { return group }
        for case .group(let child) in group.members {
            if let found = self.group(of: job, in: child) { return found }
        }
        return nil
    }

    func decode<T: Decodable>(_ text: String?, as type: T.Type) throws -> T {
        try JSONDecoder().decode(T.self, from: Data(try #require(text).utf8))
    }

    @Test(arguments: TestStore.all) func theCookbookFansOutAndCompletesPostOrder(store: TestStore) async throws {
        let queue = try await store.open()
        let id = try await queue.submit(Cookbook.tree, input: "a-cookbook", name: "cookbook")
        try await run(queue)
        let status = try #require(try await queue.workflow(id))
        #expect(status.state == .succeeded)
        let all = status.jobs
        #expect(all.allSatisfy { $0.state == .succeeded })
        func named(_ name: String) -> [Job] { all.filter { $0.name == name } }

        // Every job ran on exactly its parent's element.
        let book = try #require(named("cookbook").first)
        #expect(book.payloadJSON == #""a-cookbook""#)
        let recipes = named("recipe")
        #expect(recipes.map(\.payloadJSON) == [#""r1""#, #""r2""#, #""r3""#])
        var expected = (recipeImages: 0, ingredients: 0, ingredientImages: 0)
        for recipe in recipes {
            let output = try decode(recipe.resultJSON, as: Cookbook.Recipe.Output.self)
            let subtree = try #require(group(of: recipe.id, in: status.root))
            let direct = subtree.members.compactMap { member -> Job? in
                if case .job(let job) = member { job } else { nil }
            }
            #expect(
                direct.filter { $0.name == "recipeImage" }.map(\.payloadJSON) == output.imageIDs.map { "\"\($0)\"" })
            let ingredients = jobs(in: subtree).filter { $0.name == "ingredient" }
            #expect(ingredients.map(\.payloadJSON) == output.ingredientIDs.map { "\"\($0)\"" })
            for ingredient in ingredients {
                let images = try decode(ingredient.resultJSON, as: Cookbook.Ingredient.Output.self).imageIDs
                let below = jobs(in: try #require(group(of: ingredient.id, in: subtree))).filter {
                    $0.name == "ingredientImage"
                }
                #expect(below.map(\.payloadJSON) == images.map { "\"\($0)\"" })
                expected.ingredientImages += images.count
            }
            expected.recipeImages += output.imageIDs.count
            expected.ingredients += output.ingredientIDs.count
        }
        // r1: 2 images, 2 ingredients; r2: 1, 3; r3: 2, 4.
        #expect(expected.recipeImages == 5 && expected.ingredients == 9)
        #expect(named("recipeImage").count == expected.recipeImages)
        #expect(named("ingredient").count == expected.ingredients)
        #expect(named("ingredientImage").count == expected.ingredientImages)
        let tree = try #require(status.trees.first)
        #expect(tree.jobsCreated == all.count)
        #expect(
            tree.nodes.map(\.path) == [
                "cookbook", "cookbook/recipe", "cookbook/recipe/recipeImage", "cookbook/recipe/ingredient",
                "cookbook/recipe/ingredient/ingredientImage"
            ])
        #expect(tree.nodes.map { $0.jobs[.succeeded] ?? 0 } == [1, 3, 5, 9, expected.ingredientImages])

        // Post-order: each recipe's subtree event after every job below it, before the tree's.
        let events = try await queue.events(after: 0, filter: EventFilter(workflow: id), limit: 10_000)
        let succeededAt = Dictionary(
            uniqueKeysWithValues: events.filter { $0.kind == .succeeded }.map { ($0.jobID!, $0.id) })
        let treeEvents = events.filter { $0.kind == .tree }
        #expect(treeEvents.count == 1)
        let treeEvent = try #require(treeEvents.first)
        #expect(treeEvent.id > succeededAt.values.max()!, "the tree's event comes after its last leaf")
        #expect(treeEvent.dataJSON?.contains(#""state":"succeeded""#) == true)
        #expect(
            treeEvent.dataJSON?.contains(
                #""counts":{"jobs":\#(all.count),"succeeded":\#(all.count),"failed":0,"cancelled":0}"#) == true)
        for recipe in recipes {
            let subtreeEvents = events.filter { $0.kind == .subtree && $0.jobID == recipe.id }
            #expect(subtreeEvents.count == 1)
            let event = try #require(subtreeEvents.first)
            let below = jobs(in: try #require(group(of: recipe.id, in: status.root)))
            for job in below {
                #expect(
                    succeededAt[job.id]! < event.id, "job \(job.id) finished before recipe \(recipe.id)'s subtree event"
                )
            }
            #expect(event.id < treeEvent.id)
            #expect(event.dataJSON?.contains(#""node":"cookbook/recipe""#) == true)
            #expect(
                event.dataJSON?.contains(
                    #""counts":{"jobs":\#(below.count),"succeeded":\#(below.count),"failed":0,"cancelled":0}"#) == true)
        }
        #expect(events.filter { $0.kind == .workflow }.count == 1)
    }

    @Test(arguments: TestStore.all) func handlersHearEachSubtreeAndTheTreeOnce(store: TestStore) async throws {
        let queue = try await store.open()
        let heard = Mutex<(subtrees: [String], finishes: [SubtreeFinish])>(([], []))
        let id = try await queue.submit(
            Cookbook.tree, input: "a-cookbook",
            handlers: TreeHandlers(
                onSubtree: { done in heard.withLock { $0.subtrees.append(done.node) } },
                onFinish: { done in heard.withLock { $0.finishes.append(done) } }))
        try await run(queue)
        try await eventually(.seconds(10), "the tree's handler") { heard.withLock { !$0.finishes.isEmpty } }
        let (subtrees, finishes) = heard.withLock { ($0.subtrees, $0.finishes) }
        #expect(subtrees.filter { $0 == "cookbook/recipe" }.count == 3)
        #expect(subtrees.filter { $0 == "cookbook/recipe/ingredient" }.count == 9)
        #expect(subtrees.last == "cookbook", "the root's subtree completes last")
        #expect(finishes.count == 1)
        #expect(finishes.first?.state == .succeeded)
        #expect(finishes.first?.succeeded == (try await queue.workflow(id))?.jobs.count)
    }

    @Test(arguments: TestStore.all) func withMergesConstantsAndWrapsValuesThatAreNotObjects(store: TestStore)
        async throws
    {
        let queue = try await store.open()
        let tree = TreeNode(executor: "echo") {
            TreeNode(executor: "echo", name: "ids", each: "/ids", with: ["api": "https://example.com"])
            TreeNode(executor: "echo", name: "objects", each: "/objects", with: ["api": "https://example.com"])
            TreeNode(executor: "echo", name: "whole")
        }
        let id = try await queue.submit(
            tree, input: ["ids": JSONValue.array([1, 2]), "objects": [["k": "v"]], "other": true] as [String: JSONValue]
        )
        try await run(queue)
        let status = try #require(try await queue.workflow(id))
        #expect(status.state == .succeeded)
        #expect(
            status.jobs.filter { $0.name == "ids" }.map(\.payloadJSON) == [
                #"{"input":1,"api":"https://example.com"}"#, #"{"input":2,"api":"https://example.com"}"#
            ])
        #expect(
            status.jobs.filter { $0.name == "objects" }.map(\.payloadJSON) == [
                #"{"k":"v","api":"https://example.com"}"#
            ])
        let root = try #require(status.jobs.first { $0.name == "echo" })
        #expect(status.jobs.filter { $0.name == "whole" }.map(\.payloadJSON) == [root.resultJSON!])
    }

    @Test(arguments: TestStore.all) func anEmptyFanOutCompletesItsBranchAtOnce(store: TestStore) async throws {
        let queue = try await store.open()
        let tree = TreeNode(executor: "echo") {
            TreeNode(executor: "echo", name: "none", each: "/empty") {
                TreeNode(executor: "echo", name: "never", each: "")
            }
        }
        let id = try await queue.submit(tree, input: ["empty": JSONValue.array([])] as [String: JSONValue])
        try await run(queue)
        let status = try #require(try await queue.workflow(id))
        #expect(status.state == .succeeded)
        #expect(status.jobs.count == 1)
        #expect(try await queue.events(after: 0, filter: EventFilter(workflow: id, kinds: [.tree])).count == 1)
    }

    @Test(arguments: TestStore.all) func failTreeCancelsTheRestAndNamesTheNodeTheJobAndItsInput(store: TestStore)
        async throws
    {
        let queue = try await store.open()
        let tree = TreeNode(executor: "echo") {
            TreeNode(executor: "fail", name: "bad", each: "/bad", options: .init(maxAttempts: 1))
            TreeNode(executor: "sleep", name: "slow", each: "/slow")
        }
        let input: [String: JSONValue] = [
            "bad": [["message": "boom"]],
            "slow": [["seconds": 300], ["seconds": 300], ["seconds": 300], ["seconds": 300], ["seconds": 300]]
        ]
        let id = try await queue.submit(tree, input: input)
        let started = Date()
        try await work(queue, concurrency: 2)
        // Uncancelled, the sleeps would take 900 s at concurrency 2; a loaded parallel run took 22 s.
        #expect(Date().timeIntervalSince(started) < 120, "the running sleeps were cancelled")
        let status = try #require(try await queue.workflow(id))
        #expect(status.state == .failed)
        let bad = try #require(status.jobs.first { $0.name == "bad" })
        #expect(bad.state == .dead)
        #expect(
            status.error?.contains(#"node echo/bad (job \#(bad.id), input {"message":"boom"}) died: boom"#) == true,
            "\(status.error ?? "")")
        #expect(status.jobs.filter { $0.name == "slow" }.allSatisfy { $0.state == .cancelled })
        #expect(try await queue.jobs(state: .ready).isEmpty)
        #expect(try await queue.jobs(state: .running).isEmpty)
        let treeEvent = try #require(
            try await queue.events(after: 0, filter: EventFilter(workflow: id, kinds: [.tree])).first)
        #expect(treeEvent.dataJSON?.contains(#""state":"failed""#) == true)
    }

    @Test(arguments: TestStore.all) func continueSkipsTheFailedSubtreeAndTheTreeSucceedsListingIt(store: TestStore)
        async throws
    {
        let queue = try await store.open()
        // Recipe r2's job dies; its images and ingredients are never created.
        struct FlakyRecipe: Executor {
            static let name = "recipe"
            func run(_ input: String, context: JobContext) async throws -> Cookbook.Recipe.Output {
                if input == "r2" { throw NonRetryableError("recipe r2 is gone") }
                return try await Cookbook.Recipe().run(input, context: context)
            }
        }
        let tree = TreeNode(Cookbook.Book.self) {
            TreeNode(FlakyRecipe.self, each: "/recipeIDs", onFailure: .continue) {
                TreeNode(Cookbook.Image.self, name: "recipeImage", each: "/imageIDs")
            }
        }
        let id = try await queue.submit(tree, input: "a-cookbook")
        try await run(queue, executors: [Cookbook.Book(), FlakyRecipe(), Cookbook.Image()])
        let status = try #require(try await queue.workflow(id))
        #expect(status.state == .succeeded)
        let recipes = status.jobs.filter { $0.name == "recipe" }
        #expect(recipes.map(\.state) == [.succeeded, .dead, .succeeded])
        #expect(status.jobs.filter { $0.name == "recipeImage" }.count == 2 + 2, "r1 and r3 have 2 images each; r2 none")
        let events = try await queue.events(after: 0, filter: EventFilter(workflow: id, kinds: [.subtree, .tree]))
        let failedSubtree = try #require(events.first { $0.kind == .subtree && $0.jobID == recipes[1].id })
        #expect(failedSubtree.dataJSON?.contains(#""state":"failed""#) == true)
        let treeEvent = try #require(events.first { $0.kind == .tree })
        #expect(treeEvent.dataJSON?.contains(#""state":"succeeded""#) == true)
        #expect(
            treeEvent.dataJSON?.contains(
                #""failures":[{"job":\#(recipes[1].id),"node":"cookbook/recipe","state":"dead","error":"recipe r2 is gone"}]"#
            ) == true, "\(treeEvent.dataJSON ?? "")")
        #expect(treeEvent.dataJSON?.contains(#""failed":1"#) == true)
    }

    @Test(arguments: TestStore.all) func cancellingATreeMidWayLeavesNothingToRun(store: TestStore) async throws {
        let queue = try await store.open()
        let tree = TreeNode(executor: "echo") {
            TreeNode(executor: "sleep", name: "slow", each: "/slow") { TreeNode(executor: "echo", name: "after") }
        }
        let id = try await queue.submit(
            tree, input: ["slow": JSONValue.array(Array(repeating: ["seconds": 30], count: 6))] as [String: JSONValue])
        var options = quickOptions()
        options.prefetch = 0
        let pool = WorkerPool(
            queue: queue, queues: ["default"], concurrency: 2, executors: BuiltinExecutors.all, options: options)
        let running = Task { try await pool.run() }
        // A hang detector with room for a loaded machine (alone it takes well under a second).
        try await eventually(.seconds(30), "two sleeps to run") { try await queue.jobs(state: .running).count == 2 }
        let cancelled = try await queue.cancelWorkflow(id)
        #expect(cancelled.state == .cancelled)
        try await within(.seconds(20), "the pool") { try await running.value }
        let status = try #require(try await queue.workflow(id))
        #expect(status.jobs.filter { $0.name == "slow" }.allSatisfy { $0.state == .cancelled })
        #expect(status.jobs.filter { $0.name == "after" }.isEmpty)
        for state in [JobState.ready, .running, .waiting] { #expect(try await queue.jobs(state: state).isEmpty) }
        #expect(try await queue.events(after: 0, filter: EventFilter(workflow: id, kinds: [.tree])).count == 1)
    }

    @Test(arguments: TestStore.all) func aFanOutOverTheLimitFailsItsNodeInsteadOfFloodingTheStore(store: TestStore)
        async throws
    {
        let queue = try await store.open()
        let tree = TreeNode(executor: "echo") { TreeNode(executor: "echo", name: "many", each: "/ids") }
        let id = try await queue.submit(
            tree, input: ["ids": JSONValue.array((0..<50).map { .integer($0) })] as [String: JSONValue], maxJobs: 20)
        try await run(queue)
        let status = try #require(try await queue.workflow(id))
        #expect(status.state == .failed)
        #expect(status.jobs.count == 2, "the root and one dead job for the node")
        let many = try #require(status.jobs.first { $0.name == "many" })
        #expect(many.error?.contains("fan-out of 50 jobs") == true)
        #expect(many.error?.contains("over its limit of 20") == true, "\(many.error ?? "")")
        #expect(status.trees.first?.jobsCreated == 1)
    }

    @Test(arguments: TestStore.all) func aTreeIsAMemberOfASequence(store: TestStore) async throws {
        let queue = try await store.open()
        let tree = TreeNode(executor: "echo") { TreeNode(executor: "sleep", name: "leaf", each: "/leaves") }
        let id = try await queue.submit(
            try Workflow {
                try WorkflowStep(executor: "sum", payloadJSON: #"{"a":1,"b":2}"#, options: .init(name: "first"))
                JobTree(tree, inputJSON: #"{"leaves": [{"seconds": 0.2}, {"seconds": 0.2}]}"#, input: .previous)
                try WorkflowStep(executor: "echo", payloadJSON: "{}", options: .init(name: "last"), input: .previous)
            })
        try await run(queue)
        let status = try #require(try await queue.workflow(id))
        #expect(status.state == .succeeded)
        let root = try #require(status.jobs.first { $0.name == "echo" })
        #expect(root.payloadJSON.contains(#""previous":{"sum":3}"#))
        let last = try #require(status.jobs.first { $0.name == "last" })
        let leaves = status.jobs.filter { $0.name == "leaf" }
        #expect(leaves.count == 2)
        #expect(leaves.allSatisfy { $0.finishedAt! <= last.startedAt! }, "what follows a tree waits for its last leaf")
        #expect(last.payloadJSON == #"{"previous":\#(root.resultJSON!)}"#, "a tree's result is its root's")
    }

    @Test(arguments: TestStore.all) func aWorkflowFileTreeRuns(store: TestStore) async throws {
        let queue = try await store.open()
        let file = """
            {"name": "pages", "tree": {"executor": "echo", "payload": {"pages": [{"words": [1, 2]}, {"words": [3]}]},
              "children": [{"executor": "echo", "name": "page", "each": "/pages", "onFailure": "continue",
                "children": [{"executor": "echo", "name": "word", "each": "/words", "with": {"lang": "en"}}]}]},
             "maxJobs": 100}
            """
        let id = try await queue.submit(try Workflow(json: file, knownExecutors: Set(BuiltinExecutors.names)))
        try await run(queue)
        let status = try #require(try await queue.workflow(id))
        #expect(status.name == "pages")
        #expect(status.state == .succeeded)
        #expect(
            status.jobs.filter { $0.name == "word" }.map(\.payloadJSON) == [
                #"{"input":1,"lang":"en"}"#, #"{"input":2,"lang":"en"}"#, #"{"input":3,"lang":"en"}"#
            ])
        #expect(status.trees.first?.maxJobs == 100)
        #expect(status.trees.first?.nodes.map(\.onFailure) == [.failTree, .continue, .failTree])
    }
}
