import Foundation
import HeraldCLI

exit(HeraldCLI.main(Array(CommandLine.arguments.dropFirst()), environment: ProcessInfo.processInfo.environment))
