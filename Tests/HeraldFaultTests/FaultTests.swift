import Testing

/// Every fault test runs alone: they start real processes, measure time and memory, and
/// would disturb each other's figures on a small CI machine.
@Suite(.serialized) struct FaultTests {}
