// GET /api/v1/collectives: the collective operations of multi-GPU jobs in a window, per run —
// ranks with their time in collectives, waiting and moving data, operations with their
// durations, instances matched across ranks, and the straggler (server/service/collectives.hpp).
// Parameters: window/from/to (default 15m; a run's own span with run=), run, device, tag.KEY.
#pragma once

#include "server/api/api.hpp"
#include "server/service/collectives.hpp"

namespace perfscope::server {

// One job as the endpoint gives it; without its instances (each rank's kernels of each matched
// collective) where a document only summarises, as the analysis does.
nlohmann::json collective_job_json(const service::JobCollectives& job, bool with_instances);

HttpResponse collectives_response(const service::Sources& sources, const HttpRequest& request);

}  // namespace perfscope::server
