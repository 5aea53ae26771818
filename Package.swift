// swift-tools-version:6.0
import PackageDescription

// Swift 6 language mode everywhere. In release builds, exclusivity is checked statically
// only: the dynamic checks cost ~3 % of the sender's CPU per push (measured with perf on
// Benchmarks/fanout.sh), and debug builds and the test suite keep them.
let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
    .unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release)),
]

let package = Package(
    name: "herald",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "herald", targets: ["herald"])
    ],
    targets: [
        // C libraries from Debian, reached through thin system-library modules (style: one
        // module per C library; shim.h wraps what Swift cannot import).
        .systemLibrary(name: "CNghttp2", pkgConfig: "libnghttp2", providers: [.apt(["libnghttp2-dev"])]),
        .systemLibrary(name: "COpenSSL", pkgConfig: "openssl", providers: [.apt(["libssl-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3", providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CSystem"),  // epoll, eventfd, prctl (thread names): Linux headers Glibc's module lacks
        .systemLibrary(name: "CMicroHTTPD", pkgConfig: "libmicrohttpd", providers: [.apt(["libmicrohttpd-dev"])]),
        .systemLibrary(name: "CPostgres", pkgConfig: "libpq", providers: [.apt(["libpq-dev"])]),
        // Outbound HTTPS for webhooks: TLS verified against the system store, timeouts, HTTP/2,
        // and a socket-open hook for the SSRF guard (no hand-written HTTP/1.1 client).
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),

        // Foundations: no I/O of their own.
        .target(name: "HeraldCore", dependencies: ["CSystem"], swiftSettings: strict),
        .target(name: "HeraldCrypto", dependencies: ["COpenSSL", "HeraldCore"], swiftSettings: strict),
        .target(name: "HeraldAPNS", dependencies: ["HeraldCore"], swiftSettings: strict),

        // Wrappers that do I/O.
        .target(name: "HeraldNet", dependencies: ["CSystem", "CNghttp2", "COpenSSL", "HeraldCore", "HeraldCrypto"], swiftSettings: strict),
        .target(name: "HeraldSQL", dependencies: ["CSQLite", "HeraldCore"], swiftSettings: strict),
        .target(name: "HeraldHTTPServer", dependencies: ["CMicroHTTPD", "HeraldCore"], swiftSettings: strict),
        .target(
            name: "HeraldPostgres", dependencies: ["CPostgres", "HeraldCore"], swiftSettings: strict,
            plugins: ["EmbedMigrations"]),

        // Engines.
        .target(name: "HeraldSender", dependencies: ["HeraldNet", "HeraldAPNS", "HeraldCrypto"], swiftSettings: strict),
        .target(name: "HeraldSimulator", dependencies: ["HeraldNet", "HeraldCrypto", "HeraldHTTPServer"], swiftSettings: strict),
        .target(
            name: "HeraldStore", dependencies: ["HeraldSQL", "HeraldAPNS", "HeraldCrypto"], swiftSettings: strict,
            plugins: ["EmbedMigrations"]),
        .target(name: "HeraldFanout", dependencies: ["HeraldStore", "HeraldSender"], swiftSettings: strict),
        // The storage protocols on PostgreSQL (issue 14), beside SQLite's `Store`.
        .target(
            name: "HeraldPostgresStore", dependencies: ["HeraldStore", "HeraldPostgres", "HeraldCrypto", "HeraldCore"],
            swiftSettings: strict),
        .target(
            name: "HeraldWebhooks", dependencies: ["CCurl", "HeraldCore", "HeraldCrypto", "HeraldStore", "HeraldFanout"],
            swiftSettings: strict),

        // Faces.
        .target(
            name: "HeraldAPI", dependencies: ["HeraldHTTPServer", "HeraldStore", "HeraldFanout", "HeraldCrypto", "HeraldWebhooks"],
            swiftSettings: strict),
        .target(
            name: "HeraldCLI",
            dependencies: [
                "HeraldAPI", "HeraldSimulator", "HeraldFanout", "HeraldStore", "HeraldSender", "HeraldHTTPServer",
                "HeraldPostgresStore", "HeraldWebhooks",
            ],
            swiftSettings: strict),
        .executableTarget(name: "herald", dependencies: ["HeraldCLI"], swiftSettings: strict),

        // Benchmark drivers (Benchmarks/*.sh); not part of the product.
        .executableTarget(
            name: "herald-bench", dependencies: ["HeraldSender", "HeraldCrypto"], path: "Benchmarks/Sources/herald-bench",
            swiftSettings: strict),

        .executableTarget(
            name: "herald-pgstore-bench", dependencies: ["HeraldPostgresStore", "HeraldStore", "HeraldCore"],
            path: "Benchmarks/Sources/herald-pgstore-bench", swiftSettings: strict),

        .executableTarget(
            name: "herald-pg-bench", dependencies: ["HeraldPostgres"], path: "Benchmarks/Sources/herald-pg-bench",
            swiftSettings: strict),

        // Fuzz targets (scripts/fuzz, Benchmarks/fuzz-long.sh): one libFuzzer executable for all of
        // them, the target picked by HERALD_FUZZ_TARGET; built with the sanitizer recipe only there.
        .executableTarget(
            name: "herald-fuzz", dependencies: ["HeraldAPI", "HeraldAPNS", "HeraldCore", "HeraldCrypto", "HeraldNet", "HeraldSimulator"],
            path: "Fuzz/Sources/herald-fuzz", swiftSettings: strict),

        // Build tool: embeds Migrations/*.sql into the binary so one file deploys.
        .executableTarget(name: "EmbedMigrationsTool", path: "Plugins/EmbedMigrationsTool"),
        .plugin(name: "EmbedMigrations", capability: .buildTool(), dependencies: ["EmbedMigrationsTool"]),

        .testTarget(name: "HeraldCoreTests", dependencies: ["HeraldCore"], swiftSettings: strict),
        .testTarget(name: "HeraldCryptoTests", dependencies: ["HeraldCrypto"], swiftSettings: strict),
        .testTarget(name: "HeraldNetTests", dependencies: ["HeraldNet"], swiftSettings: strict),
        .target(
            name: "HeraldTestSupport", dependencies: ["HeraldSender", "HeraldSimulator", "HeraldStore", "HeraldFanout"],
            path: "Tests/HeraldTestSupport", swiftSettings: strict),
        .testTarget(
            name: "HeraldSenderTests", dependencies: ["HeraldSender", "HeraldSimulator", "HeraldTestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "HeraldFanoutTests",
            dependencies: ["HeraldFanout", "HeraldStore", "HeraldSender", "HeraldSimulator", "HeraldTestSupport"],
            swiftSettings: strict),
        .testTarget(name: "HeraldSimulatorTests", dependencies: ["HeraldSimulator", "HeraldHTTPServer"], swiftSettings: strict),
        .testTarget(name: "HeraldCLITests", dependencies: ["HeraldCLI", "HeraldHTTPServer"], swiftSettings: strict),
        .testTarget(name: "HeraldStoreTests", dependencies: ["HeraldStore", "HeraldSQL"], swiftSettings: strict),
        // The fan-out scheduler without I/O: fake storage, fake sender, a manual clock.
        .testTarget(
            name: "HeraldSchedulerTests",
            dependencies: ["HeraldFanout", "HeraldStore", "HeraldSender", "HeraldAPNS", "HeraldCore", "HeraldNet"],
            swiftSettings: strict),
        .testTarget(
            name: "HeraldAPITests",
            dependencies: [
                "HeraldAPI", "HeraldCLI", "HeraldTestSupport", "HeraldFanout", "HeraldStore", "HeraldSender", "HeraldSimulator",
                "HeraldHTTPServer", "HeraldPostgresStore", "HeraldWebhooks",
            ], swiftSettings: strict),
        .testTarget(name: "HeraldSQLTests", dependencies: ["HeraldSQL"], swiftSettings: strict),
        .testTarget(
            name: "HeraldPostgresTests", dependencies: ["HeraldPostgres", "HeraldCore", "HeraldTestSupport"],
            swiftSettings: strict),
        // One set of test bodies over both storage backends (SQLite file, throwaway PostgreSQL).
        .testTarget(
            name: "HeraldStorageContractTests",
            dependencies: ["HeraldStore", "HeraldPostgresStore", "HeraldPostgres", "HeraldAPNS", "HeraldCore", "HeraldTestSupport"],
            swiftSettings: strict),
        .testTarget(
            name: "HeraldWebhooksTests",
            dependencies: [
                "HeraldWebhooks", "HeraldHTTPServer", "HeraldCrypto", "HeraldStore", "HeraldFanout", "HeraldCore", "HeraldTestSupport",
                "HeraldPostgresStore",
            ],
            swiftSettings: strict),
        .testTarget(name: "HeraldHTTPServerTests", dependencies: ["HeraldHTTPServer"], swiftSettings: strict),
        .testTarget(name: "HeraldDeployTests", dependencies: ["HeraldCLI", "HeraldTestSupport"], swiftSettings: strict),
        .testTarget(
            name: "HeraldHostileTests",
            dependencies: [
                "HeraldAPI", "HeraldCore", "HeraldFanout", "HeraldHTTPServer", "HeraldSender", "HeraldSimulator", "HeraldTestSupport",
            ],
            swiftSettings: strict),
        .testTarget(
            name: "HeraldFaultTests",
            dependencies: [
                "HeraldTestSupport", "HeraldFanout", "HeraldStore", "HeraldSender", "HeraldSimulator", "HeraldSQL", "HeraldAPNS",
                "HeraldCore",
            ],
            swiftSettings: strict),
        .testTarget(
            name: "HeraldTests",
            dependencies: [
                "HeraldCLI", "HeraldAPI", "HeraldSimulator", "HeraldSender", "HeraldFanout", "HeraldStore", "HeraldTestSupport",
                "HeraldSQL",
                "HeraldPostgres",
            ],
            swiftSettings: strict),
    ]
)
