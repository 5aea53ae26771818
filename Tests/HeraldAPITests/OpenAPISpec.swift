import Foundation
import HeraldCore

/// `docs/openapi.yaml`, read two ways.
///
/// - `routes`: paths, methods and documented statuses, by a line-based reader that relies on
///   the file's layout (paths indented 2, methods 4, `responses:` 6, quoted statuses 8). No
///   dependency: these checks always run.
/// - `document`: the whole file as JSON, parsed by PyYAML through `python3` (Debian package
///   `python3-yaml`). Foundation has no YAML parser; when Python or PyYAML is missing the
///   schema checks are skipped (and say why), the route checks still run.
enum OpenAPISpec {
    static let path = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("docs/openapi.yaml").path

    static let methods: Set<String> = ["get", "put", "post", "delete", "head", "patch", "options", "trace"]

    /// Path template → method (upper case) → documented status codes.
    typealias Routes = [String: [String: Set<Int>]]

    /// The routes by the line-based reader. Throws when the file cannot be read.
    static func readRoutes() throws -> Routes {
        try routes(fromYAML: String(contentsOfFile: path, encoding: .utf8))
    }

    static func routes(fromYAML text: String) -> Routes {
        var out: Routes = [:]
        var inPaths = false
        var path: String?
        var method: String?
        var inResponses = false
        for raw in text.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = String(raw)
            if line.trimmingCharacters(in: .whitespaces).isEmpty || line.trimmingCharacters(in: .whitespaces).hasPrefix("#") { continue }
            let indent = line.prefix { $0 == " " }.count
            let body = line.dropFirst(indent)
            if indent == 0 {
                inPaths = body.hasPrefix("paths:")
                path = nil
                continue
            }
            guard inPaths else { continue }
            switch indent {
            case 2 where body.hasPrefix("/") && body.hasSuffix(":"):
                path = String(body.dropLast())
                method = nil
                out[path!, default: [:]] = out[path!] ?? [:]
            case 4:
                let key = body.hasSuffix(":") ? String(body.dropLast()) : ""
                method = methods.contains(key) ? key.uppercased() : nil
                inResponses = false
                if let path, let method { out[path]![method] = [] }
            case 6:
                inResponses = body == "responses:"
            case 8 where inResponses:
                if let path, let method, body.hasPrefix("'"), let status = Int(body.dropFirst().prefix(3)) {
                    out[path]![method]!.insert(status)
                }
            default:
                break
            }
        }
        return out
    }

    /// The whole document as JSON, or nil (with the reason) when PyYAML is not usable.
    static let document: Result<JSON, SpecUnavailable> = loadDocument()

    struct SpecUnavailable: Error, CustomStringConvertible {
        var description: String
        /// PyYAML ran and refused the file (or its JSON did not parse): the spec is broken,
        /// which is a failure, not a reason to skip (`theSpecIsValidYAML`).
        var specIsInvalid = false
    }

    static var hasDocument: Bool { (try? document.get()) != nil }

    private static func loadDocument() -> Result<JSON, SpecUnavailable> {
        let script = """
            import json, sys
            try:
                import yaml
            except ImportError:
                sys.exit(3)
            json.dump(yaml.safe_load(open(sys.argv[1], encoding='utf-8')), sys.stdout)
            """
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", "-c", script, path]
        let out = Pipe()
        let err = Pipe()
        p.standardOutput = out
        p.standardError = err
        do {
            try p.run()
        } catch {
            return .failure(SpecUnavailable(description: "python3 cannot be run (\(error)); install python3 and python3-yaml"))
        }
        let data = out.fileHandleForReading.readDataToEndOfFile()
        let errText = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        guard p.terminationStatus == 0 else {
            // Exit 3: PyYAML is missing (skip); any other failure is the file's.
            let missing = p.terminationStatus == 3
            return .failure(
                SpecUnavailable(
                    description: "python3 could not load the spec with PyYAML (Debian: python3-yaml): \(errText.suffix(300))",
                    specIsInvalid: !missing))
        }
        do {
            return .success(try JSON.parse(data))
        } catch {
            return .failure(SpecUnavailable(description: "PyYAML's JSON did not parse: \(error)", specIsInvalid: true))
        }
    }

    /// The operation object for `method path`.
    static func operation(_ doc: JSON, _ path: String, _ method: String) -> JSON? {
        doc["paths"]?[path]?[method.lowercased()]
    }

    /// Follows a local `$ref` (`#/components/...`) if `node` is one.
    static func resolve(_ doc: JSON, _ node: JSON) -> JSON {
        var node = node
        var hops = 0
        while let ref = node["$ref"]?.stringValue, ref.hasPrefix("#/"), hops < 16 {
            var target: JSON? = doc
            for part in ref.dropFirst(2).split(separator: "/") {
                target = target?[part.replacingOccurrences(of: "~1", with: "/").replacingOccurrences(of: "~0", with: "~")]
            }
            guard let t = target else { return node }
            node = t
            hops += 1
        }
        return node
    }

    /// The template among `templates` that `path` (no query) matches: literal segments
    /// equal, `{param}` segments anything non-empty. Literal matches win over parameters.
    static func template(for path: String, in templates: some Sequence<String>) -> String? {
        let segs = path.split(separator: "/", omittingEmptySubsequences: false)
        var best: (String, Int)?
        for t in templates {
            let tsegs = t.split(separator: "/", omittingEmptySubsequences: false)
            guard tsegs.count == segs.count else { continue }
            var literal = 0
            var ok = true
            for (a, b) in zip(tsegs, segs) {
                if a.hasPrefix("{") && a.hasSuffix("}") {
                    ok = !b.isEmpty
                } else {
                    ok = a == b
                    literal += 1
                }
                if !ok { break }
            }
            if ok, best == nil || literal > best!.1 { best = (t, literal) }
        }
        return best?.0
    }
}

/// A JSON Schema (2020-12 subset used by the spec) checker. `closed` makes every object
/// schema that lists `required` refuse members it does not document — how the tests prove
/// each field the server sends is in the spec.
struct SchemaValidator {
    let doc: JSON
    var closed: Bool

    /// The problems of `value` against `schema`, as `path: what` lines (empty when valid).
    func problems(_ value: JSON, _ schema: JSON, at path: String = "$") -> [String] {
        var out: [String] = []
        check(value, schema, path, extra: [], &out)
        return out
    }

    private func check(_ v: JSON, _ raw: JSON, _ path: String, extra: Set<String>, _ out: inout [String]) {
        let s = OpenAPISpec.resolve(doc, raw)
        // Keywords beside a $ref (3.1) are annotations in this spec (description, default).
        if let b = s.boolValue {
            if !b { out.append("\(path): not allowed here") }
            return
        }
        if let cond = s["if"] {
            if passes(v, cond, path, extra) {
                if let t = s["then"] { check(v, t, path, extra: extra, &out) }
            } else if let e = s["else"] {
                check(v, e, path, extra: extra, &out)
            }
        }
        if let t = s["type"] {
            let types = t.arrayValue?.compactMap(\.stringValue) ?? [t.stringValue].compactMap { $0 }
            if !types.contains(where: { matches(v, type: $0) }) {
                out.append("\(path): expected \(types.joined(separator: "|")), got \(v.typeName)")
                return
            }
        }
        if let c = s["const"], !same(v, c) { out.append("\(path): expected \(c.text), got \(v.text)") }
        if let e = s["enum"]?.arrayValue, !e.contains(where: { same(v, $0) }) {
            out.append("\(path): \(v.text) not in \(JSON.array(e).text)")
        }
        if let str = v.stringValue {
            if let n = s["minLength"]?.intValue, str.count < n { out.append("\(path): shorter than \(n)") }
            if let n = s["maxLength"]?.intValue, str.count > n { out.append("\(path): longer than \(n)") }
            if let p = s["pattern"]?.stringValue, str.range(of: p, options: .regularExpression) == nil {
                out.append("\(path): '\(str.prefix(60))' does not match \(p)")
            }
        }
        if let n = v.numberValue {
            if let m = s["minimum"]?.numberValue, n < m { out.append("\(path): \(n) < minimum \(m)") }
            if let m = s["maximum"]?.numberValue, n > m { out.append("\(path): \(n) > maximum \(m)") }
        }
        if let all = s["allOf"]?.arrayValue {
            let names = all.reduce(extra) { $0.union(propertyNames(of: $1)) }
            for sub in all { check(v, sub, path, extra: names, &out) }
        }
        if let any = s["anyOf"]?.arrayValue, !any.contains(where: { sub in passes(v, sub, path, extra) }) {
            out.append("\(path): matches none of anyOf")
        }
        if let one = s["oneOf"]?.arrayValue {
            let n = one.filter { passes(v, $0, path, extra) }.count
            if n != 1 {
                out.append("\(path): matches \(n) of oneOf")
                if n == 0 {
                    for (i, sub) in one.enumerated() { out += problems(v, sub, at: "\(path)<oneOf \(i)>").prefix(3) }
                }
            }
        }
        if let arr = v.arrayValue {
            if let n = s["minItems"]?.intValue, arr.count < n { out.append("\(path): fewer than \(n) items") }
            if let n = s["maxItems"]?.intValue, arr.count > n { out.append("\(path): more than \(n) items") }
        }
        if let items = s["items"], let arr = v.arrayValue {
            for (i, e) in arr.enumerated() { check(e, items, "\(path)[\(i)]", extra: [], &out) }
        }
        guard let obj = v.objectValue else { return }
        let props = s["properties"]?.objectValue ?? [:]
        for r in s["required"]?.arrayValue?.compactMap(\.stringValue) ?? [] where obj[r] == nil {
            out.append("\(path): missing required '\(r)'")
        }
        for (k, sub) in props { if let pv = obj[k] { check(pv, sub, "\(path).\(k)", extra: [], &out) } }
        let known = Set(props.keys).union(extra)
        let additional = s["additionalProperties"]
        for (k, pv) in obj where !known.contains(k) {
            if additional == .bool(false) || (additional == nil && closed && s["required"] != nil) {
                out.append("\(path): member '\(k)' is not in the spec")
            } else if let a = additional, a.objectValue != nil {
                check(pv, a, "\(path).\(k)", extra: [], &out)
            }
        }
    }

    private func passes(_ v: JSON, _ s: JSON, _ path: String, _ extra: Set<String>) -> Bool {
        var o: [String] = []
        check(v, s, path, extra: extra, &o)
        return o.isEmpty
    }

    /// Property names a schema documents, through $ref and allOf.
    private func propertyNames(of raw: JSON) -> Set<String> {
        let s = OpenAPISpec.resolve(doc, raw)
        var names = Set(s["properties"]?.objectValue?.keys.map { $0 } ?? [])
        for sub in s["allOf"]?.arrayValue ?? [] { names.formUnion(propertyNames(of: sub)) }
        return names
    }

    private func matches(_ v: JSON, type: String) -> Bool {
        switch (type, v) {
        case ("null", .null), ("boolean", .bool), ("string", .string), ("array", .array), ("object", .object): true
        case ("integer", _): v.intValue != nil
        case ("number", .int), ("number", .double): true
        default: false
        }
    }

    private func same(_ a: JSON, _ b: JSON) -> Bool {
        if let x = a.numberValue, let y = b.numberValue { return x == y }
        return a == b
    }
}
