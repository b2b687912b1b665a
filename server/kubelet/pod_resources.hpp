// The kubelet's PodResources API (k8s.io/kubelet/pkg/apis/podresources/v1): which pod and
// container holds which device, over the kubelet's unix socket
// (/var/lib/kubelet/pod-resources/kubelet.sock), as dcgm-exporter reads it.
//
// The API is gRPC: one unary call, `/v1.PodResourcesLister/List`, with an empty request. gRPC
// is HTTP/2 (nghttp2 does the framing, header compression and flow control) carrying
// length-prefixed protobuf messages; the five messages read here are decoded by hand, every
// field the Go definitions have skipped by its wire type, so newer kubelets' fields are ignored.
//
// Thread-safety: the functions keep no state; each call opens its own connection.
#pragma once

#include <chrono>
#include <string>
#include <string_view>
#include <vector>

#include "engine/base/status.hpp"
#include "engine/collectors/pod_directory.hpp"

namespace perfscope::server {

// The devices of every container of every pod in a ListPodResourcesResponse (protobuf bytes).
// Containers without devices are left out; a malformed message is invalid_argument.
Result<std::vector<PodDevices>> decode_list_pod_resources(std::string_view message);

// Calls List on the socket. unavailable: no socket, no answer within `timeout`, or a gRPC
// status other than OK (its message kept).
Result<std::vector<PodDevices>> list_pod_resources(const std::string& socket_path, std::chrono::milliseconds timeout);

}  // namespace perfscope::server
