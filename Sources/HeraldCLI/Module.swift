/// The HeraldCLI module (placeholder until its first code lands).
public enum HeraldCLIModule {}
