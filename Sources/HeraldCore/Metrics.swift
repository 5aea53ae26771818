import Foundation
import Synchronization

/// A Prometheus metrics registry. Series are created once (at startup or on first use of a
/// label combination) and then updated lock-free on the hot path; `render()` writes the
/// text exposition format (version 0.0.4).
///
/// Naming follows style §11: `herald_<subsystem>_<name>_<unit>`, counters end in `_total`,
/// label values come from closed sets.
public final class MetricsRegistry: Sendable {
    enum Kind: String, Sendable { case counter, gauge, histogram }

    final class Family: Sendable {
        let name: String
        let help: String
        let kind: Kind
        let series: Locked<[String: Series]>  // key: rendered label set
        init(name: String, help: String, kind: Kind) {
            self.name = name
            self.help = help
            self.kind = kind
            self.series = Locked([:])
        }
    }

    enum Series: Sendable {
        case counter(Counter)
        case gauge(Gauge)
        case sampled(@Sendable () -> Double)
        case histogram(Histogram)
    }

    private let families: Locked<[String: Family]>
    /// Labels every series made through this view carries (`with(labels:)`).
    private let constantLabels: [String: String]

    public init() {
        families = Locked([:])
        constantLabels = [:]
    }

    private init(sharing families: Locked<[String: Family]>, constantLabels: [String: String]) {
        self.families = families
        self.constantLabels = constantLabels
    }

    /// A view of this registry whose series all carry `labels` too (a label the caller
    /// also gives keeps the caller's value): one APNs pool per team registers its metrics
    /// through `with(labels: ["team": id])`, and both render from this registry.
    public func with(labels: [String: String]) -> MetricsRegistry {
        MetricsRegistry(sharing: families, constantLabels: constantLabels.merging(labels) { _, new in new })
    }

    private func all(_ labels: [String: String]) -> [String: String] {
        constantLabels.isEmpty ? labels : labels.merging(constantLabels) { given, _ in given }
    }

    private func family(_ name: String, _ help: String, _ kind: Kind) -> Family {
        families.withLock { f in
            if let existing = f[name] {
                precondition(existing.kind == kind, "metric \(name) registered as two kinds")
                return existing
            }
            let fam = Family(name: name, help: help, kind: kind)
            f[name] = fam
            return fam
        }
    }

    static func labelKey(_ labels: [String: String]) -> String {
        guard !labels.isEmpty else { return "" }
        return labels.keys.sorted().map { k in "\(k)=\"\(escape(labels[k]!))\"" }.joined(separator: ",")
    }

    static func escape(_ v: String) -> String {
        var out = ""
        for c in v {
            switch c {
            case "\\": out += "\\\\"
            case "\"": out += "\\\""
            case "\n": out += "\\n"
            default: out.append(c)
            }
        }
        return out
    }

    /// The counter `name{labels}`, created on first use.
    public func counter(_ name: String, help: String, labels: [String: String] = [:]) -> Counter {
        let fam = family(name, help, .counter)
        let key = Self.labelKey(all(labels))
        return fam.series.withLock { s in
            if case .counter(let c) = s[key] { return c }
            let c = Counter()
            s[key] = .counter(c)
            return c
        }
    }

    /// The gauge `name{labels}`, created on first use.
    public func gauge(_ name: String, help: String, labels: [String: String] = [:]) -> Gauge {
        let fam = family(name, help, .gauge)
        let key = Self.labelKey(all(labels))
        return fam.series.withLock { s in
            if case .gauge(let g) = s[key] { return g }
            let g = Gauge()
            s[key] = .gauge(g)
            return g
        }
    }

    /// A gauge whose value is read from `sample` at scrape time (called on the scraping thread).
    public func sampledGauge(
        _ name: String, help: String, labels: [String: String] = [:], _ sample: @escaping @Sendable () -> Double
    ) {
        let fam = family(name, help, .gauge)
        let key = Self.labelKey(all(labels))
        fam.series.withLock { $0[key] = .sampled(sample) }
    }

    /// A counter whose value is read at scrape time (for totals kept elsewhere).
    public func sampledCounter(
        _ name: String, help: String, labels: [String: String] = [:], _ sample: @escaping @Sendable () -> Double
    ) {
        let fam = family(name, help, .counter)
        let key = Self.labelKey(all(labels))
        fam.series.withLock { $0[key] = .sampled(sample) }
    }

    /// The histogram `name{labels}` with the given upper bounds (in the metric's unit).
    public func histogram(
        _ name: String, help: String, buckets: [Double], labels: [String: String] = [:]
    ) -> Histogram {
        let fam = family(name, help, .histogram)
        let key = Self.labelKey(all(labels))
        return fam.series.withLock { s in
            if case .histogram(let h) = s[key] { return h }
            let h = Histogram(buckets: buckets)
            s[key] = .histogram(h)
            return h
        }
    }

    /// Every family in the Prometheus text format, families sorted by name.
    public func render() -> String {
        let fams = families.withLock { Array($0.values) }.sorted { $0.name < $1.name }
        var out = ""
        for fam in fams {
            let series = fam.series.withLock { $0 }.sorted { $0.key < $1.key }
            out += "# HELP \(fam.name) \(fam.help)\n# TYPE \(fam.name) \(fam.kind.rawValue)\n"
            for (key, s) in series {
                let braces = key.isEmpty ? "" : "{\(key)}"
                switch s {
                case .counter(let c): out += "\(fam.name)\(braces) \(c.value)\n"
                case .gauge(let g): out += "\(fam.name)\(braces) \(Self.format(g.value))\n"
                case .sampled(let f): out += "\(fam.name)\(braces) \(Self.format(f()))\n"
                case .histogram(let h): out += h.render(name: fam.name, labelKey: key)
                }
            }
        }
        return out
    }

    static func format(_ v: Double) -> String {
        if v.isNaN { return "NaN" }
        if v.isInfinite { return v > 0 ? "+Inf" : "-Inf" }
        if v == v.rounded() && abs(v) < 1e15 { return String(Int64(v)) }
        return String(v)
    }
}

/// A monotonically increasing counter.
public final class Counter: Sendable {
    private let v = Atomic<UInt64>(0)
    public init() {}
    @inline(__always) public func inc(_ by: UInt64 = 1) { v.add(by, ordering: .relaxed) }
    public var value: UInt64 { v.load(ordering: .relaxed) }
}

/// A value that goes up and down.
public final class Gauge: Sendable {
    private let bits = Atomic<Int64>(0)  // value × 1000, so fractional gauges are possible
    public init() {}
    public func set(_ x: Double) { bits.store(Int64(x * 1000), ordering: .relaxed) }
    public func add(_ x: Int64) { bits.add(x * 1000, ordering: .relaxed) }
    public var value: Double { Double(bits.load(ordering: .relaxed)) / 1000 }
}

/// A cumulative histogram with fixed buckets.
public final class Histogram: Sendable {
    let bounds: [Double]
    let counts: [Counter]
    private let total = Atomic<UInt64>(0)
    private let sumMicros = Atomic<UInt64>(0)  // sum × 1e6, kept integral for atomics

    /// Adds a tally's count and sum (its buckets are added by the caller).
    func addTotals(count: UInt64, sumMicros micros: UInt64) {
        total.add(count, ordering: .relaxed)
        sumMicros.add(micros, ordering: .relaxed)
    }

    init(buckets: [Double]) {
        bounds = buckets.sorted()
        counts = (0..<buckets.count).map { _ in Counter() }
    }

    public func observe(_ x: Double) {
        // Buckets are stored non-cumulatively; render() accumulates.
        if let i = bounds.firstIndex(where: { x <= $0 }) { counts[i].inc() }
        total.add(1, ordering: .relaxed)
        sumMicros.add(UInt64(max(0, x) * 1e6), ordering: .relaxed)
    }

    public var count: UInt64 { total.load(ordering: .relaxed) }

    func render(name: String, labelKey: String) -> String {
        var out = ""
        var cumulative: UInt64 = 0
        let sep = labelKey.isEmpty ? "" : labelKey + ","
        for (i, b) in bounds.enumerated() {
            cumulative += counts[i].value
            out += "\(name)_bucket{\(sep)le=\"\(MetricsRegistry.format(b))\"} \(cumulative)\n"
        }
        let n = total.load(ordering: .relaxed)
        let braces = labelKey.isEmpty ? "" : "{\(labelKey)}"
        out += "\(name)_bucket{\(sep)le=\"+Inf\"} \(n)\n"
        out += "\(name)_sum\(braces) \(Double(sumMicros.load(ordering: .relaxed)) / 1e6)\n"
        out += "\(name)_count\(braces) \(n)\n"
        return out
    }

    /// Latency buckets in seconds, 1 ms to 60 s.
    public static let latencySeconds: [Double] = [
        0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
    ]
}
