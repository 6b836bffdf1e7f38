#include "common/http_auth.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>

#include "common/base64.h"

namespace ds {
namespace {

bool IsTokenChar(unsigned char c) {
  return std::isalnum(c) ||
         std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

bool SameName(std::string_view a, std::string_view b) {
  return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
           return std::tolower(static_cast<unsigned char>(x)) ==
                  std::tolower(static_cast<unsigned char>(y));
         });
}

StatusOr<std::string> ReadPem(const std::string& path, const std::string& name) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::InvalidArgument(name + ": cannot read " + path);
  std::stringstream ss;
  ss << in.rdbuf();
  std::string pem = ss.str();
  if (pem.find("-----BEGIN") == std::string::npos)
    return Status::InvalidArgument(name + ": " + path + " is not PEM (no -----BEGIN line)");
  return pem;
}

}  // namespace

StatusOr<std::string> CheckHeaderLine(std::string_view line) {
  size_t colon = line.find(':');
  if (colon == std::string_view::npos)
    return Status::InvalidArgument("header must be \"Name: value\" (no colon found)");
  std::string_view name = line.substr(0, colon);
  while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
  if (name.empty()) return Status::InvalidArgument("header has no name before the colon");
  for (unsigned char c : name)
    if (!IsTokenChar(c))
      return Status::InvalidArgument("header name \"" + std::string(name) +
                                     "\" has a character not allowed in a header name");
  if (SameName(name, "Authorization"))
    return Status::InvalidArgument(
        "header Authorization: use the bearer token or basic auth options (they keep the "
        "secret in a file)");
  for (const char* own : {"Host", "Content-Type", "Content-Length"})
    if (SameName(name, own))
      return Status::InvalidArgument("header " + std::string(name) + ": set by the client itself");
  std::string_view value = line.substr(colon + 1);
  while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
  while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
  if (value.empty()) return Status::InvalidArgument("header " + std::string(name) + ": no value");
  for (unsigned char c : value)
    if (c < 0x20 ? c != '\t' : c == 0x7f)
      return Status::InvalidArgument("header " + std::string(name) +
                                     ": the value has a control character");
  return std::string(name) + ": " + std::string(value);
}

std::string AuthorizationHeader(const std::string& token, const std::string& user,
                                const std::string& password) {
  if (!token.empty()) return "Authorization: Bearer " + token;
  if (!user.empty()) return "Authorization: Basic " + Base64Encode(user + ":" + password);
  return "";
}

StatusOr<TlsOptions> LoadTlsFiles(const HttpAuthConfig& auth, const std::string (&names)[3]) {
  TlsOptions tls;
  tls.insecure_skip_verify = auth.insecure_skip_verify;
  if (!auth.ca_file.empty()) {
    ASSIGN_OR_RETURN(tls.ca_pem, ReadPem(auth.ca_file, names[0]));
  }
  if (!auth.cert_file.empty()) {
    ASSIGN_OR_RETURN(tls.client_cert_pem, ReadPem(auth.cert_file, names[1]));
  }
  if (!auth.key_file.empty()) {
    ASSIGN_OR_RETURN(tls.client_key_pem, ReadPem(auth.key_file, names[2]));
  }
  return tls;
}

}  // namespace ds
