#include "server/kubelet/pod_resources.hpp"

#include <nghttp2/nghttp2.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <optional>

namespace perfscope::server {

namespace {

// ---- protobuf, as much as five messages need ----

class ProtoReader {
 public:
  explicit ProtoReader(std::string_view bytes) : p_(bytes) {}
  bool done() const { return p_.empty(); }

  // The next field's number and wire type; false at a malformed tag.
  bool tag(std::uint32_t& field, std::uint32_t& wire) {
    auto v = varint();
    if (!v || (*v >> 3) == 0 || (*v >> 3) > 0x1FFFFFFF) return false;
    field = static_cast<std::uint32_t>(*v >> 3);
    wire = static_cast<std::uint32_t>(*v & 7);
    return true;
  }
  std::optional<std::uint64_t> varint() {
    std::uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_.empty()) return std::nullopt;
      const auto byte = static_cast<unsigned char>(p_.front());
      p_.remove_prefix(1);
      v |= static_cast<std::uint64_t>(byte & 0x7F) << shift;
      if (!(byte & 0x80)) return v;
    }
    return std::nullopt;
  }
  std::optional<std::string_view> bytes() {
    auto n = varint();
    if (!n || *n > p_.size()) return std::nullopt;
    std::string_view out = p_.substr(0, static_cast<std::size_t>(*n));
    p_.remove_prefix(out.size());
    return out;
  }
  // Skips a field of a kind this reader does not keep.
  bool skip(std::uint32_t wire) {
    switch (wire) {
      case 0: return varint().has_value();
      case 1: return take(8);
      case 2: return bytes().has_value();
      case 5: return take(4);
      default: return false;  // groups (3, 4) are not in these messages
    }
  }

 private:
  bool take(std::size_t n) {
    if (p_.size() < n) return false;
    p_.remove_prefix(n);
    return true;
  }
  std::string_view p_;
};

// Reads a message's length-delimited fields: `on(field, bytes)` for each, others skipped.
template <typename OnField>
bool read_message(std::string_view message, OnField on) {
  ProtoReader r(message);
  while (!r.done()) {
    std::uint32_t field = 0, wire = 0;
    if (!r.tag(field, wire)) return false;
    if (wire != 2) {
      if (!r.skip(wire)) return false;
      continue;
    }
    auto b = r.bytes();
    if (!b || !on(field, *b)) return false;
  }
  return true;
}

// ContainerDevices { string resource_name = 1; repeated string device_ids = 2; TopologyInfo topology = 3; }
bool decode_devices(std::string_view message, PodDevices& out) {
  return read_message(message, [&](std::uint32_t field, std::string_view b) {
    if (field == 1) out.resource = b;
    if (field == 2) out.device_ids.emplace_back(b);
    return true;
  });
}

// ContainerResources { string name = 1; repeated ContainerDevices devices = 2; … }
bool decode_container(std::string_view message, const std::string& ns, const std::string& pod, std::vector<PodDevices>& out) {
  std::string name;
  std::vector<PodDevices> devices;
  bool ok = read_message(message, [&](std::uint32_t field, std::string_view b) {
    if (field == 1) name = b;
    if (field == 2) return decode_devices(b, devices.emplace_back());
    return true;
  });
  if (!ok) return false;
  for (PodDevices& d : devices) {  // the name may come after the devices on the wire
    d.ref = PodRef{ns, pod, name};
    out.push_back(std::move(d));
  }
  return true;
}

// PodResources { string name = 1; string namespace = 2; repeated ContainerResources containers = 3; }
bool decode_pod(std::string_view message, std::vector<PodDevices>& out) {
  std::string name, ns;
  std::vector<std::string_view> containers;
  bool ok = read_message(message, [&](std::uint32_t field, std::string_view b) {
    if (field == 1) name = b;
    if (field == 2) ns = b;
    if (field == 3) containers.push_back(b);
    return true;
  });
  if (!ok) return false;
  for (std::string_view c : containers) {
    if (!decode_container(c, ns, name, out)) return false;
  }
  return true;
}

// ---- gRPC over HTTP/2 on a unix socket ----

constexpr std::size_t kMaxResponseBytes = 64 << 20;  // a node's pods are kilobytes; a bound all the same
constexpr const char* kListPath = "/v1.PodResourcesLister/List";

struct Call {
  std::int32_t stream_id = -1;
  int http_status = 0;
  std::optional<int> grpc_status;
  std::string grpc_message;
  std::string body;
  bool closed = false, too_large = false;
  std::uint32_t close_error = 0;
  std::size_t request_sent = 0;
};

// The request: one uncompressed, empty ListPodResourcesRequest behind gRPC's 5-byte prefix.
constexpr unsigned char kRequest[5] = {0, 0, 0, 0, 0};

ssize_t read_request(nghttp2_session*, std::int32_t, std::uint8_t* buf, std::size_t length, std::uint32_t* flags,
                     nghttp2_data_source*, void* user) {
  Call& call = *static_cast<Call*>(user);
  const std::size_t n = std::min(length, sizeof kRequest - call.request_sent);
  std::memcpy(buf, kRequest + call.request_sent, n);
  call.request_sent += n;
  if (call.request_sent == sizeof kRequest) *flags |= NGHTTP2_DATA_FLAG_EOF;
  return static_cast<ssize_t>(n);
}

int on_header(nghttp2_session*, const nghttp2_frame* frame, const std::uint8_t* name, std::size_t name_len,
              const std::uint8_t* value, std::size_t value_len, std::uint8_t, void* user) {
  Call& call = *static_cast<Call*>(user);
  if (frame->hd.stream_id != call.stream_id) return 0;
  std::string_view n(reinterpret_cast<const char*>(name), name_len), v(reinterpret_cast<const char*>(value), value_len);
  if (n == ":status") call.http_status = std::atoi(std::string(v).c_str());
  if (n == "grpc-status") call.grpc_status = std::atoi(std::string(v).c_str());
  if (n == "grpc-message") call.grpc_message = v;
  return 0;
}

int on_data(nghttp2_session*, std::uint8_t, std::int32_t stream_id, const std::uint8_t* data, std::size_t len, void* user) {
  Call& call = *static_cast<Call*>(user);
  if (stream_id != call.stream_id) return 0;
  if (call.body.size() + len > kMaxResponseBytes) {
    call.too_large = true;
    return NGHTTP2_ERR_CALLBACK_FAILURE;
  }
  call.body.append(reinterpret_cast<const char*>(data), len);
  return 0;
}

int on_close(nghttp2_session*, std::int32_t stream_id, std::uint32_t error_code, void* user) {
  Call& call = *static_cast<Call*>(user);
  if (stream_id == call.stream_id) {
    call.closed = true;
    call.close_error = error_code;
  }
  return 0;
}

struct SessionDeleter {
  void operator()(nghttp2_session* s) const { nghttp2_session_del(s); }
};
struct Fd {
  int fd = -1;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

Status unavailable(const std::string& socket_path, const std::string& why) {
  return Status::unavailable("PodResources at " + socket_path + ": " + why);
}

// The gRPC messages of a response body: exactly one, uncompressed, for a unary call.
Result<std::string_view> single_message(std::string_view body) {
  if (body.size() < 5) return Status::invalid_argument("the answer holds no gRPC message");
  if (body[0] != 0) return Status::invalid_argument("the answer is compressed, which was not asked for");
  const auto* p = reinterpret_cast<const unsigned char*>(body.data());
  const std::size_t length = (std::size_t{p[1]} << 24) | (std::size_t{p[2]} << 16) | (std::size_t{p[3]} << 8) | p[4];
  if (body.size() != 5 + length) return Status::invalid_argument("the answer's gRPC framing does not add up");
  return body.substr(5);
}

}  // namespace

Result<std::vector<PodDevices>> decode_list_pod_resources(std::string_view message) {
  std::vector<PodDevices> out;
  // ListPodResourcesResponse { repeated PodResources pod_resources = 1; }
  bool ok = read_message(message, [&](std::uint32_t field, std::string_view b) {
    return field != 1 || decode_pod(b, out);
  });
  if (!ok) return Status::invalid_argument("the ListPodResourcesResponse is malformed");
  return out;
}

Result<std::vector<PodDevices>> list_pod_resources(const std::string& socket_path, std::chrono::milliseconds timeout) {
  sockaddr_un addr{};
  if (socket_path.empty() || socket_path.size() >= sizeof addr.sun_path) return unavailable(socket_path, "not a socket path");
  addr.sun_family = AF_UNIX;
  std::memcpy(addr.sun_path, socket_path.c_str(), socket_path.size() + 1);
  Fd sock{::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0)};
  if (sock.fd < 0) return unavailable(socket_path, std::strerror(errno));
  if (::connect(sock.fd, reinterpret_cast<const sockaddr*>(&addr), sizeof addr) != 0) {
    return unavailable(socket_path, std::string("cannot connect: ") + std::strerror(errno));
  }

  Call call;
  nghttp2_session_callbacks* callbacks = nullptr;
  if (nghttp2_session_callbacks_new(&callbacks) != 0) return Status::internal("out of memory");
  nghttp2_session_callbacks_set_on_header_callback(callbacks, on_header);
  nghttp2_session_callbacks_set_on_data_chunk_recv_callback(callbacks, on_data);
  nghttp2_session_callbacks_set_on_stream_close_callback(callbacks, on_close);
  nghttp2_session* raw = nullptr;
  const int created = nghttp2_session_client_new(&raw, callbacks, &call);
  nghttp2_session_callbacks_del(callbacks);
  if (created != 0) return Status::internal("cannot start an HTTP/2 session");
  std::unique_ptr<nghttp2_session, SessionDeleter> session(raw);

  // Windows as large as the answer may be, so no flow-control round trips are needed.
  const nghttp2_settings_entry settings[] = {{NGHTTP2_SETTINGS_ENABLE_PUSH, 0},
                                             {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, kMaxResponseBytes}};
  nghttp2_submit_settings(session.get(), NGHTTP2_FLAG_NONE, settings, std::size(settings));
  nghttp2_session_set_local_window_size(session.get(), NGHTTP2_FLAG_NONE, 0, static_cast<std::int32_t>(kMaxResponseBytes));
  auto nv = [](const char* name, const char* value) {
    return nghttp2_nv{reinterpret_cast<std::uint8_t*>(const_cast<char*>(name)),
                      reinterpret_cast<std::uint8_t*>(const_cast<char*>(value)), std::strlen(name), std::strlen(value),
                      NGHTTP2_NV_FLAG_NONE};
  };
  const nghttp2_nv headers[] = {nv(":method", "POST"), nv(":scheme", "http"), nv(":path", kListPath),
                                nv(":authority", "localhost"), nv("content-type", "application/grpc"),
                                nv("te", "trailers"), nv("user-agent", "perfscope")};
  nghttp2_data_provider request{};
  request.read_callback = read_request;
  call.stream_id = nghttp2_submit_request(session.get(), nullptr, headers, std::size(headers), &request, nullptr);
  if (call.stream_id < 0) return Status::internal(std::string("cannot submit the call: ") + nghttp2_strerror(call.stream_id));

  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buffer[16384];
  while (!call.closed) {
    for (;;) {  // everything nghttp2 has to send
      const std::uint8_t* out = nullptr;
      const ssize_t n = nghttp2_session_mem_send(session.get(), &out);
      if (n < 0) return unavailable(socket_path, nghttp2_strerror(static_cast<int>(n)));
      if (n == 0) break;
      for (ssize_t sent = 0; sent < n;) {
        const ssize_t w = ::send(sock.fd, out + sent, static_cast<std::size_t>(n - sent), MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0) return unavailable(socket_path, std::string("write: ") + std::strerror(errno));
        sent += w;
      }
    }
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return unavailable(socket_path, "no answer within " + std::to_string(timeout.count()) + " ms");
    pollfd p{sock.fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready < 0) return unavailable(socket_path, std::string("poll: ") + std::strerror(errno));
    if (ready == 0) continue;  // the deadline check above ends it
    const ssize_t r = ::recv(sock.fd, buffer, sizeof buffer, 0);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return unavailable(socket_path, std::string("read: ") + std::strerror(errno));
    if (r == 0) return unavailable(socket_path, "the kubelet closed the connection before answering");
    const ssize_t used = nghttp2_session_mem_recv(session.get(), reinterpret_cast<const std::uint8_t*>(buffer), static_cast<std::size_t>(r));
    if (call.too_large) return unavailable(socket_path, "the answer is larger than " + std::to_string(kMaxResponseBytes) + " bytes");
    if (used < 0) return unavailable(socket_path, std::string("HTTP/2: ") + nghttp2_strerror(static_cast<int>(used)));
  }
  if (call.close_error != NGHTTP2_NO_ERROR) {
    return unavailable(socket_path, std::string("the call was reset: ") + nghttp2_http2_strerror(call.close_error));
  }
  if (call.http_status != 200) return unavailable(socket_path, "HTTP status " + std::to_string(call.http_status));
  if (!call.grpc_status) return unavailable(socket_path, "the answer has no grpc-status");
  if (*call.grpc_status != 0) {
    return unavailable(socket_path, "gRPC status " + std::to_string(*call.grpc_status) +
                                        (call.grpc_message.empty() ? "" : ": " + call.grpc_message));
  }
  auto message = single_message(call.body);
  if (!message.ok()) return unavailable(socket_path, message.status().message());
  auto decoded = decode_list_pod_resources(*message);
  if (!decoded.ok()) return unavailable(socket_path, decoded.status().message());
  return decoded;
}

}  // namespace perfscope::server
