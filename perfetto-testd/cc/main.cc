// perfetto-testd: Perfetto's tracing service and a recording client, for
// tests, built from the amalgamated SDK source of the crates.io package
// perfetto-sdk-sys (the same Perfetto revision as the producers it serves).
//
//   perfetto-testd traced
//       The service (traced), listening on PERFETTO_PRODUCER_SOCK_NAME and
//       PERFETTO_CONSUMER_SOCK_NAME (Perfetto's defaults where unset).
//   perfetto-testd perfetto [--txt] -c CONFIG -o OUT
//       Records one session into OUT, as Perfetto's `perfetto` command
//       does: until the config's duration_ms, or until SIGINT/SIGTERM,
//       which flush the data sources and stop the session. Configs with
//       write_into_file get OUT's descriptor, the service writes into it.
//   perfetto-testd perfetto --query-raw
//       The service's state (TracingServiceState, binary) on stdout.
//   perfetto-testd config-to-pb < CONFIG.pbtx > CONFIG.pb
//       The text-format parser alone.
//
// The sub-commands and their options are those of Perfetto's `tracebox`,
// so that the tests can run either.

#include "perfetto_c.cc"

#include "textproto.h"

#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

namespace {

using perfetto::base::UnixTaskRunner;

void Say(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  fputs("perfetto-testd: ", stderr);
  vfprintf(stderr, fmt, args);
  fputc('\n', stderr);
  va_end(args);
}

bool WriteAll(int fd, const void* data, size_t size) {
  const char* p = static_cast<const char*>(data);
  while (size > 0) {
    ssize_t n = write(fd, p, size);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return false;
    p += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool ReadAll(const char* path, std::string* out) {
  int fd = strcmp(path, "-") == 0 ? dup(0) : open(path, O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return false;
  char buf[65536];
  for (;;) {
    ssize_t n = read(fd, buf, sizeof(buf));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      close(fd);
      return false;
    }
    if (n == 0)
      break;
    out->append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return true;
}

int Traced() {
  UnixTaskRunner task_runner;
  const char* producer = perfetto::GetProducerSocket();
  const char* consumer = perfetto::GetConsumerSocket();
  for (const auto& sock : perfetto::TokenizeProducerSockets(producer))
    remove(sock.c_str());
  remove(consumer);
  std::unique_ptr<perfetto::ServiceIPCHost> svc =
      perfetto::ServiceIPCHost::CreateInstance(&task_runner);
  if (!svc->Start(producer, consumer)) {
    Say("cannot listen on %s and %s", producer, consumer);
    return 1;
  }
  Say("traced listening on %s %s", producer, consumer);
  task_runner.Run();
  return 0;
}

// SIGINT and SIGTERM, passed to the task runner through a pipe.
int g_signal_pipe[2] = {-1, -1};

void OnSignal(int) {
  int saved = errno;
  char c = 1;
  ssize_t ignored = write(g_signal_pipe[1], &c, 1);
  (void)ignored;
  errno = saved;
}

bool InstallSignals() {
  if (pipe2(g_signal_pipe, O_CLOEXEC | O_NONBLOCK) != 0)
    return false;
  struct sigaction sa {};
  sa.sa_handler = OnSignal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  return sigaction(SIGINT, &sa, nullptr) == 0 &&
         sigaction(SIGTERM, &sa, nullptr) == 0;
}

class Recorder : public perfetto::Consumer {
 public:
  Recorder(UnixTaskRunner* task_runner,
           perfetto::TraceConfig config,
           int out_fd,
           std::string out_path,
           bool query)
      : task_runner_(task_runner),
        config_(std::move(config)),
        out_fd_(out_fd),
        out_path_(std::move(out_path)),
        query_(query) {}

  void Connect() {
    socket_ = perfetto::GetConsumerSocket();
    endpoint_ =
        perfetto::ConsumerIPCClient::Connect(socket_, this, task_runner_);
  }

  int exit_code() const { return exit_code_; }

  // Drops the connection while the task runner still exists.
  void Close() { endpoint_.reset(); }

  void OnConnect() override {
    connected_ = true;
    if (query_) {
      endpoint_->QueryServiceState(
          {}, [this](bool ok, const perfetto::TracingServiceState& state) {
            if (!ok) {
              Say("the service did not give its state");
              return Finish(1);
            }
            std::string raw = state.SerializeAsString();
            Finish(WriteAll(1, raw.data(), raw.size()) ? 0 : 1);
          });
      return;
    }
    perfetto::base::ScopedFile fd;
    if (config_.write_into_file())
      fd.reset(dup(out_fd_));
    endpoint_->EnableTracing(config_, std::move(fd));
    task_runner_->AddFileDescriptorWatch(g_signal_pipe[0], [this] {
      char buf[16];
      while (read(g_signal_pipe[0], buf, sizeof(buf)) > 0) {
      }
      Stop();
    });
    if (config_.duration_ms()) {
      // As Perfetto's command: give up if the service has not ended the
      // session a minute after it should have.
      uint32_t limit = config_.duration_ms() + 60000 +
                       config_.flush_timeout_ms() +
                       config_.data_source_stop_timeout_ms();
      task_runner_->PostDelayedTask(
          [this] {
            Say("timed out waiting for the service to end the session");
            Finish(1);
          },
          limit);
    }
  }

  void OnDisconnect() override {
    if (!connected_)
      Say("cannot connect to the tracing service at %s", socket_);
    else if (!finished_)
      Say("disconnected from the tracing service");
    Finish(1);
  }

  void OnTracingDisabled(const std::string& error) override {
    if (!error.empty()) {
      Say("service error: %s", error.c_str());
      return Finish(1);
    }
    if (config_.write_into_file())
      return Finish(0);
    endpoint_->ReadBuffers();
  }

  void OnTraceData(std::vector<perfetto::TracePacket> packets,
                   bool has_more) override {
    for (auto& packet : packets) {
      char* preamble;
      size_t size;
      std::tie(preamble, size) = packet.GetProtoPreamble();
      bool ok = WriteAll(out_fd_, preamble, size);
      for (const perfetto::Slice& slice : packet.slices())
        ok = ok && WriteAll(out_fd_, slice.start, slice.size);
      if (!ok) {
        Say("cannot write %s: %s", out_path_.c_str(), strerror(errno));
        return Finish(1);
      }
    }
    if (!has_more)
      Finish(0);
  }

  void OnDetach(bool) override {}
  void OnAttach(bool, const perfetto::TraceConfig&) override {}
  void OnTraceStats(bool, const perfetto::TraceStats&) override {}
  void OnObservableEvents(const perfetto::ObservableEvents&) override {}

 private:
  // SIGINT/SIGTERM: flush every data source, then stop the session.
  void Stop() {
    if (stopping_ || finished_)
      return;
    stopping_ = true;
    endpoint_->Flush(
        0,
        [this](bool ok) {
          if (!ok)
            Say("the final flush did not complete");
          endpoint_->DisableTracing();
        },
        perfetto::FlushFlags(perfetto::FlushFlags::Initiator::kPerfettoCmd,
                             perfetto::FlushFlags::Reason::kTraceStop));
  }

  void Finish(int code) {
    if (finished_)
      return;
    finished_ = true;
    exit_code_ = code;
    if (code == 0 && !query_) {
      struct stat st {};
      fstat(out_fd_, &st);
      Say("wrote %lld bytes into %s", static_cast<long long>(st.st_size),
          out_path_.c_str());
    }
    task_runner_->Quit();
  }

  UnixTaskRunner* task_runner_;
  perfetto::TraceConfig config_;
  int out_fd_;
  std::string out_path_;
  bool query_;
  const char* socket_ = "";
  std::unique_ptr<perfetto::TracingService::ConsumerEndpoint> endpoint_;
  bool connected_ = false;
  bool stopping_ = false;
  bool finished_ = false;
  int exit_code_ = 1;
};

int Usage() {
  fputs(
      "usage: perfetto-testd traced\n"
      "       perfetto-testd perfetto [--txt] -c CONFIG|- -o OUT|-\n"
      "       perfetto-testd perfetto --query-raw\n"
      "       perfetto-testd config-to-pb < CONFIG.pbtx > CONFIG.pb\n",
      stderr);
  return 1;
}

int ConfigToPb() {
  std::string text, pb, error;
  if (!ReadAll("-", &text)) {
    Say("cannot read the config from stdin: %s", strerror(errno));
    return 1;
  }
  if (!testd::TextProto::Parse(text, &pb, &error)) {
    Say("config: %s", error.c_str());
    return 1;
  }
  return WriteAll(1, pb.data(), pb.size()) ? 0 : 1;
}

int Perfetto(int argc, char** argv) {
  bool txt = false, query = false;
  const char* config_path = nullptr;
  const char* out_path = nullptr;
  for (int i = 0; i < argc; i++) {
    std::string a = argv[i];
    if (a == "--txt") {
      txt = true;
    } else if (a == "--query-raw") {
      query = true;
    } else if ((a == "-c" || a == "--config") && i + 1 < argc) {
      config_path = argv[++i];
    } else if ((a == "-o" || a == "--out") && i + 1 < argc) {
      out_path = argv[++i];
    } else {
      Say("perfetto: unknown or incomplete option '%s'", a.c_str());
      return Usage();
    }
  }
  perfetto::TraceConfig config;
  int out_fd = -1;
  if (!query) {
    if (!config_path || !out_path)
      return Usage();
    std::string raw;
    if (!ReadAll(config_path, &raw)) {
      Say("cannot read the config %s: %s", config_path, strerror(errno));
      return 1;
    }
    if (txt) {
      std::string pb, error;
      if (!testd::TextProto::Parse(raw, &pb, &error)) {
        Say("%s: %s", config_path, error.c_str());
        return 1;
      }
      raw = std::move(pb);
    }
    if (!config.ParseFromString(raw)) {
      Say("%s is not a TraceConfig (binary; --txt for text)", config_path);
      return 1;
    }
    out_fd = strcmp(out_path, "-") == 0
                 ? dup(1)
                 : open(out_path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (out_fd < 0) {
      Say("cannot open %s: %s", out_path, strerror(errno));
      return 1;
    }
    if (!InstallSignals()) {
      Say("cannot handle SIGINT/SIGTERM: %s", strerror(errno));
      return 1;
    }
  }
  UnixTaskRunner task_runner;
  Recorder recorder(&task_runner, std::move(config), out_fd,
                    out_path ? out_path : "", query);
  recorder.Connect();
  task_runner.Run();
  recorder.Close();
  if (out_fd >= 0)
    close(out_fd);
  return recorder.exit_code();
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2)
    return Usage();
  std::string cmd = argv[1];
  if (cmd == "traced" && argc == 2)
    return Traced();
  if (cmd == "perfetto")
    return Perfetto(argc - 2, argv + 2);
  if (cmd == "config-to-pb" && argc == 2)
    return ConfigToPb();
  return Usage();
}
