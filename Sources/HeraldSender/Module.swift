/// The HeraldSender module (placeholder until its first code lands).
public enum HeraldSenderModule {}
