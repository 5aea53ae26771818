import Foundation
import HeraldCore
import Testing

@testable import HeraldSimulator

/// The control side: health, faults, connection actions, settings, routing errors.
@Suite struct SimulatorControlTests {
    @Test func healthzAnswersOK() throws {
        let f = try ControlFixture()
        let r = try f.call("GET", "/healthz")
        #expect(r.status == 200)
        #expect(r.json == ["status": "ok"])
        #expect(r.headers["content-type"] == "application/json")
    }

    @Test func faultsAreReadAndReplacedAndAppliedToPushes() throws {
        let f = try ControlFixture()
        #expect(try f.call("GET", "/faults").json == ["spec": ""])
        let put = try f.call("PUT", "/faults", body: #"{"spec":"500=1.0,retry-after=3"}"#)
        #expect(put.status == 200)
        #expect(f.sim.faults.errorRates == [500: 1.0])
        #expect(try f.call("GET", "/faults").json?["spec"] == .string(f.sim.faults.spec))
        // Every push now fails with 500 InternalServerError.
        let push = try f.pushUpdate(String(repeating: "0f", count: 32), timestamp: 1)
        #expect(push.status == 500)
        #expect(try JSON.parse(push.body)["reason"] == "InternalServerError")
        #expect(try f.call("PUT", "/faults", body: #"{"spec":""}"#).status == 200)
        #expect(f.sim.faults == SimulatorFaults())
    }

    @Test func aBadFaultSpecIs400AndChangesNothing() throws {
        let f = try ControlFixture()
        _ = try f.call("PUT", "/faults", body: #"{"spec":"503=0.5"}"#)
        let r = try f.call("PUT", "/faults", body: #"{"spec":"bogus=1"}"#)
        #expect(r.status == 400)
        #expect(r.json?["error"]?["code"] == "invalid_field")
        #expect(r.json?["error"]?["message"]?.stringValue?.contains("bogus") == true)
        #expect(f.sim.faults.errorRates == [503: 0.5])
        #expect(try f.call("PUT", "/faults", body: "{}").status == 400)
    }

    @Test func goAwayDisconnectAndResetAnswerWithWhatTheyDid() throws {
        let f = try ControlFixture()
        #expect(try f.call("POST", "/goaway", body: #"{"reason":"ShuttingDown"}"#).json == ["goaway": "ShuttingDown"])
        #expect(try f.call("POST", "/goaway").json == ["goaway": "Shutdown"])
        #expect(try f.call("POST", "/disconnect").json == ["disconnected": true])
        #expect(try f.call("POST", "/reset").json == ["reset": true])
        // The simulator still serves afterwards.
        #expect(try f.pushUpdate(String(repeating: "0f", count: 32), timestamp: 1).status == 200)
    }

    @Test func settingsValidateMaxConcurrentStreams() throws {
        let f = try ControlFixture()
        #expect(try f.call("PUT", "/settings", body: #"{"max_concurrent_streams":1}"#).json == ["max_concurrent_streams": 1])
        let negative = try f.call("PUT", "/settings", body: #"{"max_concurrent_streams":-1}"#)
        #expect(negative.status == 422)
        #expect(try f.call("PUT", "/settings", body: #"{}"#).status == 400)
    }

    @Test func unknownRoutesAre404AndWrongMethods405WithAllow() throws {
        let f = try ControlFixture()
        let missing = try f.call("GET", "/nope")
        #expect(missing.status == 404)
        #expect(missing.json?["error"]?["code"] == "not_found")
        let wrong = try f.call("DELETE", "/faults")
        #expect(wrong.status == 405)
        #expect(wrong.headers["allow"] == "GET, PUT")
        #expect(wrong.json?["error"]?["code"] == "method_not_allowed")
        #expect(try f.call("GET", "/reset").status == 405)
    }

    @Test func theControlPortIsRefusedWhenTaken() throws {
        let f = try ControlFixture()
        #expect(throws: (any Error).self) {
            _ = try SimulatorControl(simulator: f.sim, listen: f.control.address, logger: .discard)
        }
    }
}
