/// The HeraldSimulator module (placeholder until its first code lands).
public enum HeraldSimulatorModule {}
