// What kube-apiserver's proxy does to a request on its way to the backend and to the answer on
// its way back, as pure functions of values (no sockets): the subpath and the redirect of an empty
// one, the headers passed on and added, the headers dropped from the answer, and the rewriting of
// a Location header. Sources (kubernetes, staging/src/k8s.io/...):
//   - apiserver/pkg/endpoints/handlers/rest.go getRequestOptions: the subpath is the request's
//     path after ".../proxy", with a leading '/' and the request's trailing '/';
//   - pkg/registry/core/service/proxy.go: the backend path is
//     JoinPreservingTrailingSlash(location path, subpath) (apimachinery/pkg/util/net/http.go:
//     path.Join, so "." and ".." and "//" are cleaned, and the trailing '/' kept);
//   - apimachinery/pkg/util/proxy/upgradeaware.go ServeHTTP: the raw query is passed on as it is;
//     an empty backend path of a GET or HEAD is a 301 to the request's path + "/"; the backend's
//     Host header is the request's (UseLocationHost is false for services); Go's
//     httputil.ReverseProxy removes the hop-by-hop headers both ways and appends the client's
//     address to X-Forwarded-For;
//   - apimachinery/pkg/util/proxy/transport.go (WrapTransport is true for services): sets
//     X-Forwarded-Uri (the request's path as the client sent it to the API server, without the
//     query); X-Forwarded-Host and -Proto only when the incoming request's URL carries a host
//     and scheme, which a server-side request never does, so they are not set; rewrites a
//     Location header of the answer to go through the proxy (rewriteURL), or else, in a
//     text/html answer, the URL-valued attributes of its tags (rewriteHTML); and
//     corsRemovingTransport drops the backend's Access-Control-Allow-{Credentials,Headers,
//     Methods,Origin};
//   - apiserver/pkg/endpoints/filters/authentication.go: after a successful authentication the
//     Authorization header is deleted, and so are the front proxy's X-Remote-User,
//     X-Remote-Group and X-Remote-Extra-* headers, so none of them reaches the backend.
// Header names are passed on in Go's canonical form (net/textproto.CanonicalMIMEHeaderKey), as
// Go's server stores them.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace sim {

using HeaderList = std::vector<std::pair<std::string, std::string>>;

// Go's path.Clean.
std::string CleanPath(const std::string& path);
// Go's url.URL.EscapedPath for a path without RawPath (shouldEscape in encodePath mode): every
// byte but letters, digits, "-_.~" and "$&+,/:;=@" is %XX-escaped.
std::string EscapePath(const std::string& path);
// net/textproto.CanonicalMIMEHeaderKey: "x-forwarded-for" -> "X-Forwarded-For"; a name with a
// byte that is not a token character comes back unchanged.
std::string CanonicalHeaderKey(const std::string& name);

// Where a proxied request goes, from the request's (percent-decoded) path and the part of it
// after ".../proxy".
struct ProxyPath {
  // The path to send to the backend ("" for none: the root, "/" on the wire).
  std::string backend_path;
  // The request's path without the backend's part: what transport.go prepends to rewritten URLs
  // ("/api/v1/namespaces/NS/services/ID/proxy").
  std::string prepend;
  // X-Forwarded-Uri.
  std::string forwarded_uri;
  // Non-empty: answer 301 with this Location instead of proxying (an empty path, GET or HEAD).
  std::string redirect;
};
// `request_path` is the whole decoded path, `rest` what follows ".../proxy" in it ("" or "/...").
ProxyPath ProxyPathFor(const std::string& method, const std::string& request_path,
                       const std::string& rest, const std::string& raw_query);

// The headers to send to the backend, from the request's (name, value) pairs in the order they
// arrived: without Host (the caller sends it first), Content-Length and Transfer-Encoding (the
// body is re-framed), the hop-by-hop headers (Connection and those it names, Keep-Alive,
// Proxy-Connection, Proxy-Authenticate, Proxy-Authorization, TE but "TE: trailers", Trailer,
// Upgrade), Authorization and the front proxy's identity headers; with the client's address
// appended to X-Forwarded-For and X-Forwarded-Uri set. Names canonical, sorted by name as Go's
// Header.Write writes them, User-Agent first (Go's request writer puts it after Host).
HeaderList BackendRequestHeaders(const HeaderList& request, const std::string& client_ip,
                                 const std::string& forwarded_uri);

// The backend's answer headers to pass to the client: without the hop-by-hop headers, the
// framing headers the server sets itself (Transfer-Encoding), and the CORS headers
// corsRemovingTransport drops; a Location rewritten by RewriteLocation. Order kept.
HeaderList ClientResponseHeaders(const HeaderList& backend, const std::string& backend_host,
                                 const std::string& request_host, const std::string& prepend);

// transport.go rewriteURL for a Location header: a URL with a path starting with '/' whose host
// is empty, the backend's ("ip:port") or the request's Host goes through the proxy: the prepend
// before its path (unless already there), scheme and host dropped unless the host is the
// request's; any other URL is kept as it is.
std::string RewriteLocation(const std::string& location, const std::string& backend_host,
                            const std::string& request_host, const std::string& prepend);

// transport.go rewriteHTML over a whole text/html body: the URL-valued attributes of the tags
// atomsToAttrs lists (a href, link href, script src, img src, form action, ...) rewritten by
// RewriteLocation. As golang.org/x/net/html's tokenizer and Token.String() write it, every start
// tag comes out re-serialized -- name and attribute names lower-cased, values unescaped then
// escaped again (&'<>"\r) inside double quotes, a value-less attribute as name="" -- and
// everything else (text, end tags, comments, doctype, the raw text of script, style, textarea,
// title...) byte for byte. A tokenizer of HTML's common forms, not of the whole WHATWG grammar.
std::string RewriteHtml(const std::string& html, const std::string& backend_host,
                        const std::string& request_host, const std::string& prepend);

// ASCII lower case, and spaces and tabs trimmed at both ends: for header names and values (the
// proxy's rules here, and the backend connection's, test/sim/sim_backend_conn.cc).
std::string Lower(std::string s);
std::string Trim(const std::string& s);

}  // namespace sim
