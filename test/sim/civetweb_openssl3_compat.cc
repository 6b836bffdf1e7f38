// Debian bookworm's CivetWeb 1.15 loads OpenSSL at run time with dlopen("libssl.so") and looks
// up OpenSSL 1.1 names. OpenSSL 3 dropped one of them, SSL_get_peer_certificate (now a macro
// for SSL_get1_peer_certificate), so CivetWeb calls a null pointer on every TLS connection.
//
// This library's SONAME is "libssl.so" and it depends on the real libssl.so.3. The simulator
// dlopens it by path before starting CivetWeb; when CivetWeb then calls dlopen("libssl.so"),
// glibc matches the request against the SONAME of what is loaded and returns this library, and
// dlsym then finds the missing symbol here and every other one in libssl.so.3 behind it. The
// replacement has the same semantics: both return the peer certificate with its reference count
// incremented.
#include <openssl/ssl.h>

#undef SSL_get_peer_certificate

extern "C" {
__attribute__((visibility("default"))) X509* SSL_get_peer_certificate(const SSL* ssl) {
  return SSL_get1_peer_certificate(ssl);
}
}
