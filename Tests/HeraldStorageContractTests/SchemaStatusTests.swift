import HeraldPostgresStore
import Testing

/// What `herald serve` decides from the migrations a PostgreSQL database records (no
/// database here: the decision value alone).
@Suite struct SchemaStatusTests {
    @Test(
        arguments: [
            ([], [1, 2], SchemaStatus.empty),
            ([1, 2], [1, 2], .current),
            ([1], [1, 2], .behind(missing: [2])),
            ([2], [1, 2, 3], .behind(missing: [1, 3])),
            ([1, 2, 3], [1, 2], .newer(database: 3, known: 2)),
            // Newer wins over missing: an old binary never runs on a newer schema.
            ([1, 7], [1, 2, 3], .newer(database: 7, known: 3)),
            ([], [], .current),
            ([1], [], .newer(database: 1, known: 0)),
        ] as [([Int], [Int], SchemaStatus)])
    func decidesFromAppliedAndKnown(applied: [Int], known: [Int], expected: SchemaStatus) {
        #expect(SchemaStatus(applied: applied, known: known) == expected)
    }

    @Test func onlyCurrentStartsAndEveryRefusalSaysWhatToDo() {
        #expect(SchemaStatus.current.refusal(target: "t") == nil)
        let empty = SchemaStatus.empty.refusal(target: "postgresql://herald@db/herald")
        #expect(empty?.contains("postgresql://herald@db/herald has no Herald schema") == true)
        #expect(empty?.contains("herald migrate") == true)
        #expect(SchemaStatus.behind(missing: [2, 7]).refusal(target: "t")?.contains("lacks migrations 2, 7") == true)
        #expect(SchemaStatus.behind(missing: [2]).refusal(target: "t")?.contains("herald migrate") == true)
        #expect(SchemaStatus.newer(database: 9, known: 2).refusal(target: "t")?.contains("newer than this herald knows (2)") == true)
    }
}
