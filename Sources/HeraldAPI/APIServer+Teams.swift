import HeraldSender

extension APIServer {
    /// Refuses a channel for a bundle no configured Apple team covers (422
    /// `bundle_not_covered`, naming the teams file): nothing could be sent for it.
    func requireTeam(for bundle: String) throws {
        guard let teams = config.apnsTeams, case .uncovered = teams.team(for: bundle) else { return }
        throw APIError(422, "bundle_not_covered", teams.uncoveredMessage(bundle))
    }
}
