import COpenSSL
/// The HeraldCrypto module (placeholder until its first code lands).
public enum HeraldCryptoModule {}
