#include "platoon/process/child.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>
#include <thread>

namespace platoon::process {
namespace {
int DecodeStatus(int raw) {
  if (WIFEXITED(raw)) return WEXITSTATUS(raw);
  if (WIFSIGNALED(raw)) return 128 + WTERMSIG(raw);
  return 255;
}
}  // namespace

Child Child::Spawn(const std::vector<std::string>& argv, bool capture_output) {
  if (argv.empty()) throw std::runtime_error("spawn: empty command");
  int fds[2] = {-1, -1};
  if (capture_output && pipe2(fds, O_CLOEXEC) != 0)
    throw std::runtime_error(std::string("spawn: pipe: ") + std::strerror(errno));
  // A child blocks on a full pipe while its reader is busy elsewhere (a test asking the server, the
  // launcher starting the next node): 1 MiB (the default pipe-max-size) holds minutes of a busy log
  // rather than 64 KiB's few hundred lines. A smaller system limit keeps the default size.
  if (capture_output) (void)fcntl(fds[0], F_SETPIPE_SZ, 1 << 20);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);

  const pid_t parent = getpid();
  const pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("spawn: fork: ") + std::strerror(errno));
  if (pid == 0) {
    // Child: own process group, so a terminal's Ctrl-C reaches it only through the parent.
    setpgid(0, 0);
    // The child dies with its parent: SIGTERM when the parent (the thread that forked) ends, even by
    // SIGKILL, so no orphan holds a port. A parent that died between fork() and prctl() sent nothing:
    // then the child has been re-parented already and leaves at once.
    if (prctl(PR_SET_PDEATHSIG, SIGTERM) != 0 || getppid() != parent) _exit(127);
    if (capture_output) {
      dup2(fds[1], STDOUT_FILENO);
      dup2(fds[1], STDERR_FILENO);
    }
    execv(args[0], args.data());
    const std::string msg = "spawn: cannot execute " + argv[0] + ": " + std::strerror(errno) + "\n";
    (void)!write(STDERR_FILENO, msg.data(), msg.size());
    _exit(127);
  }
  Child c;
  c.pid_ = pid;
  if (capture_output) {
    close(fds[1]);
    c.out_fd_ = fds[0];
    fcntl(c.out_fd_, F_SETFL, fcntl(c.out_fd_, F_GETFL) | O_NONBLOCK);
  }
  return c;
}

Child::Child(Child&& o) noexcept { *this = std::move(o); }

Child& Child::operator=(Child&& o) noexcept {
  if (this != &o) {
    std::swap(pid_, o.pid_);
    std::swap(out_fd_, o.out_fd_);
    std::swap(status_, o.status_);
    std::swap(partial_, o.partial_);
    std::swap(lines_, o.lines_);
    std::swap(read_pos_, o.read_pos_);
  }
  return *this;
}

Child::~Child() {
  if (Running()) {
    kill(pid_, SIGKILL);
    int raw = 0;
    waitpid(pid_, &raw, 0);
  }
  if (out_fd_ >= 0) close(out_fd_);
}

void Child::Signal(int signal) const {
  if (Running()) kill(pid_, signal);
}

std::optional<int> Child::TryWait() {
  if (status_ || pid_ <= 0) return status_;
  int raw = 0;
  const pid_t r = waitpid(pid_, &raw, WNOHANG);
  if (r == pid_) status_ = DecodeStatus(raw);
  return status_;
}

std::optional<int> Child::WaitFor(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<std::string> sink;
  while (!TryWait()) {
    if (std::chrono::steady_clock::now() >= deadline) return std::nullopt;
    // Keep the pipe drained so a chatty child cannot block on a full pipe while exiting.
    if (out_fd_ >= 0) {
      pollfd p{out_fd_, POLLIN, 0};
      poll(&p, 1, 10);
      Pump(sink);
    } else {
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
  }
  return status_;
}

bool Child::Pump(std::vector<std::string>& out) {
  if (out_fd_ < 0) return false;
  char buf[4096];
  while (true) {
    const ssize_t n = read(out_fd_, buf, sizeof buf);
    if (n > 0) {
      partial_.append(buf, static_cast<size_t>(n));
      size_t nl;
      while ((nl = partial_.find('\n')) != std::string::npos) {
        out.push_back(partial_.substr(0, nl));
        lines_.push_back(out.back());
        partial_.erase(0, nl + 1);
      }
      continue;
    }
    if (n == 0) {
      if (!partial_.empty()) {
        out.push_back(partial_);
        lines_.push_back(partial_);
        partial_.clear();
      }
      return false;
    }
    return errno == EAGAIN || errno == EINTR;
  }
}

std::optional<std::string> Child::ReadLine(std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  std::vector<std::string> got;
  while (true) {
    if (read_pos_ < lines_.size()) return lines_[read_pos_++];
    const bool open = Pump(got);
    if (read_pos_ < lines_.size()) continue;
    if (!open) return std::nullopt;
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) return std::nullopt;
    pollfd p{out_fd_, POLLIN, 0};
    poll(&p, 1, static_cast<int>(std::min<int64_t>(left.count(), 100)));
  }
}

std::optional<std::string> Child::WaitForLine(const std::string& needle, std::chrono::milliseconds timeout) {
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  while (true) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    auto line = ReadLine(std::max(left, std::chrono::milliseconds(0)));
    if (!line) return std::nullopt;
    if (line->find(needle) != std::string::npos) return line;
  }
}

namespace {

std::string ReadProcFile(const std::filesystem::path& p) {
  std::ifstream in(p);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// The fields of a thread's /proc/<pid>/task/<tid>/stat after its name: "tid (comm) S ppid ... utime(14)
// stime(15)" gives {S, ppid, ...}. A thread that ends while being read leaves a short or empty file: nullopt,
// never a throw on what /proc gives.
std::optional<std::vector<std::string>> TaskStatFields(const std::filesystem::path& task_dir) {
  const std::string stat = ReadProcFile(task_dir / "stat");
  const auto close = stat.rfind(')');  // the name may hold spaces and ')'
  if (close == std::string::npos || close + 2 > stat.size()) return std::nullopt;
  std::istringstream fields(stat.substr(close + 2));
  return std::vector<std::string>{std::istream_iterator<std::string>(fields), {}};
}

}  // namespace

int LiveThreads(pid_t pid) {
  int live = 0;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
    const auto f = TaskStatFields(entry.path());
    if (f && !f->empty() && (*f)[0] != "Z" && (*f)[0] != "X") ++live;
  }
  return live;
}

std::string ThreadStates(pid_t pid) {
  namespace fs = std::filesystem;
  std::string out;
  std::error_code ec;
  const fs::path task = "/proc/" + std::to_string(pid) + "/task";
  for (const auto& entry : fs::directory_iterator(task, ec)) {
    const auto fields = TaskStatFields(entry.path());
    if (!fields) continue;
    const std::vector<std::string>& f = *fields;
    const double cpu_ms = f.size() > 12 ? (std::strtod(f[11].c_str(), nullptr) + std::strtod(f[12].c_str(), nullptr)) *
                                              1000.0 / static_cast<double>(sysconf(_SC_CLK_TCK))
                                        : -1;
    std::string comm = ReadProcFile(entry.path() / "comm");
    if (!comm.empty() && comm.back() == '\n') comm.pop_back();
    std::ostringstream line;
    line << entry.path().filename().string() << " " << comm << ": state " << (f.empty() ? "?" : f[0]) << ", wchan "
         << ReadProcFile(entry.path() / "wchan") << ", cpu " << cpu_ms << " ms";
    std::string stack = ReadProcFile(entry.path() / "stack");
    if (!stack.empty()) {
      std::string frames;
      std::istringstream in(stack);
      for (std::string l; std::getline(in, l) && frames.size() < 300;) {
        const auto sp = l.find(' ');
        frames += (frames.empty() ? "" : " < ") + (sp == std::string::npos ? l : l.substr(sp + 1));
      }
      line << ", kernel stack " << frames;
    }
    out += line.str() + "\n";
  }
  return out.empty() ? "no threads in " + task.string() + "\n" : out;
}

std::string ExecutableDir() {
  std::error_code ec;
  auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (ec) return ".";
  return exe.parent_path().string();
}

}  // namespace platoon::process
