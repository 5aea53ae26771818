import CSQLite
/// The HeraldSQL module (placeholder until its first code lands).
public enum HeraldSQLModule {}
