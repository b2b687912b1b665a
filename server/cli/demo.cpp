// `perfscope demo`: a real CPU workload instrumented with the in-process Monitor, reporting
// to a server through the EventClient. Nothing is synthetic: every duration, latency, token
// count and allocation reported is one this process measured or made.
#include <algorithm>
#include <cmath>
#include <condition_variable>
#include <deque>
#include <iostream>
#include <mutex>
#include <random>
#include <thread>
#include <vector>

#include "engine/sdk/monitor.hpp"
#include "server/client/client.hpp"
#include "server/cli/tools.hpp"

namespace perfscope::server {
namespace {

using Matrix = std::vector<float>;

// Three genuinely different implementations of C = A·B (n×n, row-major).
void matmul_naive(const float* a, const float* b, float* c, int n) {
  for (int i = 0; i < n; ++i) {
    for (int j = 0; j < n; ++j) {
      float sum = 0;
      for (int k = 0; k < n; ++k) sum += a[i * n + k] * b[k * n + j];  // strided walk down B
      c[i * n + j] = sum;
    }
  }
}

void matmul_blocked(const float* a, const float* b, float* c, int n) {
  constexpr int kTile = 32;
  std::fill(c, c + n * n, 0.0f);
  for (int i0 = 0; i0 < n; i0 += kTile) {
    for (int k0 = 0; k0 < n; k0 += kTile) {
      for (int j0 = 0; j0 < n; j0 += kTile) {
        for (int i = i0; i < std::min(i0 + kTile, n); ++i) {
          for (int k = k0; k < std::min(k0 + kTile, n); ++k) {
            float aik = a[i * n + k];
            for (int j = j0; j < std::min(j0 + kTile, n); ++j) c[i * n + j] += aik * b[k * n + j];
          }
        }
      }
    }
  }
}

// i-k-j order over whole contiguous rows with no aliasing: the inner loop vectorizes.
void matmul_vectorized(const float* __restrict a, const float* __restrict b, float* __restrict c, int n) {
  std::fill(c, c + n * n, 0.0f);
  for (int i = 0; i < n; ++i) {
    float* __restrict crow = c + i * n;
    for (int k = 0; k < n; ++k) {
      const float aik = a[i * n + k];
      const float* __restrict brow = b + k * n;
      for (int j = 0; j < n; ++j) crow[j] += aik * brow[j];
    }
  }
}

struct Request {
  TimestampNs arrival_ns;
  int input_tokens;
};

// A bounded queue of arrived requests shared by the arrival thread and the worker.
class RequestQueue {
 public:
  void push(Request r) {
    {
      std::lock_guard lock(mu_);
      if (q_.size() < 1000) q_.push_back(r);
    }
    cv_.notify_one();
  }
  bool pop(Request& r, const std::atomic<bool>& done) {
    std::unique_lock lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(100), [&] { return !q_.empty() || done.load(); });
    if (q_.empty()) return false;
    r = q_.front();
    q_.pop_front();
    return true;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Request> q_;
};

class Demo {
 public:
  Demo(const DemoOptions& options, Monitor& monitor) : o_(options), m_(monitor) {}

  // Kernel variants, their buffers and command-buffer-like batches.
  void kernel_loop(const std::atomic<bool>& done) {
    const int n = o_.matrix_size;
    std::mt19937 rng(7);
    std::uniform_real_distribution<float> dist(-1, 1);
    std::uint64_t batch_id = 0;
    while (!done) {
      const TimestampNs enqueue = now_ns();
      Matrix a(static_cast<std::size_t>(n * n)), b(a.size()), c(a.size());
      for (float& x : a) x = dist(rng);
      for (float& x : b) x = dist(rng);
      const std::size_t bytes = a.size() * sizeof(float);
      m_.track_allocation(a.data(), bytes, MemoryKind::kHost, "matmul.A");
      m_.track_allocation(b.data(), bytes, MemoryKind::kHost, "matmul.B");
      m_.track_allocation(c.data(), bytes, MemoryKind::kHost, "matmul.C");
      const TimestampNs submit = now_ns();
      m_.run_variant("matmul", "naive", [&] { matmul_naive(a.data(), b.data(), c.data(), n); }, 3);
      m_.run_variant("matmul", "blocked", [&] { matmul_blocked(a.data(), b.data(), c.data(), n); }, 3);
      m_.run_variant("matmul", "vectorized", [&] { matmul_vectorized(a.data(), b.data(), c.data(), n); }, 3);
      {
        Monitor::ScopedKernel k(m_, "reduce_sum");
        volatile float sum = 0;
        for (float x : c) sum = sum + x;
      }
      const TimestampNs end = now_ns();
      CommandBufferEvent cb;
      cb.id = "batch-" + std::to_string(++batch_id);
      cb.queue = "cpu-queue";
      cb.device = m_.config().device;
      cb.enqueue_ns = enqueue;
      cb.submit_ns = submit;
      cb.start_ns = submit;
      cb.end_ns = end;
      (void)m_.record_command_buffer(cb);
      m_.track_deallocation(a.data());
      m_.track_deallocation(b.data());
      m_.track_deallocation(c.data());
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  // Poisson arrivals at the configured rate.
  void arrival_loop(const std::atomic<bool>& done, RequestQueue& queue) {
    std::mt19937 rng(11);
    std::exponential_distribution<double> gap(o_.request_rate);
    std::uniform_int_distribution<int> prompt(32, 256);
    while (!done) {
      std::this_thread::sleep_for(std::chrono::duration<double>(gap(rng)));
      queue.push(Request{now_ns(), prompt(rng)});
    }
  }

  // One model instance: a prefill pass, then one decode step per output token.
  void worker_loop(const std::atomic<bool>& done, RequestQueue& queue) {
    const int n = o_.matrix_size / 2;
    Matrix w(static_cast<std::size_t>(n * n), 0.01f), x(w.size(), 1.0f), y(w.size());
    m_.track_allocation(w.data(), w.size() * sizeof(float), MemoryKind::kHost, "model.weights");
    std::mt19937 rng(13);
    std::uniform_int_distribution<int> tokens(8, 48);
    const std::string model = o_.llm ? "demo-llm" : "demo-mlp", version = "1";
    Request r;
    while (!done) {
      if (!queue.pop(r, done)) continue;
      const TimestampNs start = now_ns();
      InferenceEvent e;
      e.model = model;
      e.version = version;
      e.queue_ms = static_cast<double>(start - r.arrival_ns) / 1e6;
      {
        Monitor::ScopedKernel k(m_, "prefill");
        for (int t = 0; t < std::max(1, r.input_tokens / 32); ++t) matmul_vectorized(w.data(), x.data(), y.data(), n);
      }
      const TimestampNs first_token = now_ns();
      int out = 1;
      if (o_.llm) {
        out = tokens(rng);
        for (int t = 1; t < out; ++t) {
          Monitor::ScopedKernel k(m_, "decode_step");
          matmul_vectorized(w.data(), y.data(), x.data(), n / 2);
        }
        e.ttft_ms = static_cast<double>(first_token - r.arrival_ns) / 1e6;
        e.input_tokens = static_cast<std::uint64_t>(r.input_tokens);
        e.output_tokens = static_cast<std::uint64_t>(out);
      }
      const TimestampNs end = now_ns();
      e.ts_ns = end;
      e.latency_ms = static_cast<double>(end - r.arrival_ns) / 1e6;
      e.compute_ms = static_cast<double>(end - start) / 1e6;
      (void)m_.record_inference(e);
    }
    m_.track_deallocation(w.data());
  }

 private:
  const DemoOptions& o_;
  Monitor& m_;
};

}  // namespace

int run_demo(const DemoOptions& options, const std::atomic<bool>& stop) {
  ClientOptions copts;
  copts.token = options.token;
  copts.url = options.server;
  auto client = EventClient::create(copts);
  if (!client.ok()) {
    std::cerr << "perfscope demo: " << client.status().message() << "\n";
    return 2;
  }
  MonitorConfig mconfig;
  mconfig.device = "cpu0";
  mconfig.run = options.run;
  Monitor monitor(mconfig);
  monitor.add_sink((*client)->sink());
  monitor.start();

  std::atomic<bool> done{false};
  Demo demo(options, monitor);
  RequestQueue queue;
  std::thread kernels([&] { demo.kernel_loop(done); });
  std::thread arrivals([&] { demo.arrival_loop(done, queue); });
  std::thread worker([&] { demo.worker_loop(done, queue); });
  std::cout << "perfscope demo: reporting to " << options.server << " (Ctrl-C stops)" << std::endl;

  const auto started = std::chrono::steady_clock::now();
  while (!stop.load()) {
    if (options.duration_s > 0 &&
        std::chrono::steady_clock::now() - started >= std::chrono::duration<double>(options.duration_s)) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  done = true;
  kernels.join();
  arrivals.join();
  worker.join();
  monitor.stop();
  (*client)->flush();
  ClientStats s = (*client)->stats();
  std::cout << "perfscope demo: " << s.events_sent << " events sent, " << s.events_failed << " failed, "
            << s.events_dropped << " dropped" << (s.last_error.empty() ? "" : " (last error: " + s.last_error + ")")
            << std::endl;
  return s.events_failed == 0 ? 0 : 1;
}

}  // namespace perfscope::server
