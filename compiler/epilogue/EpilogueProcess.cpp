//===- compiler/epilogue/EpilogueProcess.cpp - clang in a helper process --===//
//
// An epilogue's source is the user's, and clang is not hardened against
// hostile input: some sources crash it, overflow its stack or allocate
// without bound. So the host never runs clang itself. One helper process
// per host (gatherjit-epilogue, started with posix_spawn on the first
// epilogue and reused) reads requests on a socket and answers each with a
// compiled module or one error line. When it dies or overruns its time,
// the compile in progress fails with a clean error naming why, and the next
// epilogue starts a new helper.
//
// The wire: a message is a count and that many strings, each a 64-bit
// length and its bytes (native byte order: both ends are one build).
//
//===----------------------------------------------------------------------===//

#include "compiler/epilogue/Epilogue.h"

#include <llvm/Support/ErrorHandling.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <dlfcn.h>
#include <fcntl.h>
#include <mutex>
#include <new>
#include <poll.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

namespace gatherjit {

namespace {

using Clock = std::chrono::steady_clock;

/// The helper's exit status when an allocation failed (its handlers).
constexpr int ExitOutOfMemory = 3;
/// Bytes of a request the helper accepts: the source and the parameters
/// are at most MaxEpilogueBytes each.
constexpr uint64_t RequestBytes = uint64_t(16) << 20;
/// Fields of a request and of a successful answer.
constexpr size_t RequestFields = 10, AnswerFields = 7;

void put(std::string &Buf, std::string_view S) {
  const uint64_t N = S.size();
  Buf.append(reinterpret_cast<const char *>(&N), sizeof N);
  Buf.append(S);
}

std::string message(const std::vector<std::string> &Fields) {
  std::string Buf;
  put(Buf, std::to_string(Fields.size()));
  for (const std::string &F : Fields)
    put(Buf, F);
  return Buf;
}

/// Reads exactly \p N bytes of \p Fd, waiting until \p Deadline (none if
/// unset). False on end of file, error or time out (\p TimedOut set).
bool readAll(int Fd, char *P, size_t N, const std::optional<Clock::time_point> &Deadline,
             bool &TimedOut) {
  while (N) {
    if (Deadline) {
      const auto Left =
          std::chrono::duration_cast<std::chrono::milliseconds>(*Deadline - Clock::now());
      if (Left.count() <= 0)
        return TimedOut = true, false;
      pollfd Poll = {Fd, POLLIN, 0};
      const int Ready =
          ::poll(&Poll, 1, static_cast<int>(std::min<int64_t>(Left.count(), 1 << 30)));
      if (Ready < 0 && errno == EINTR)
        continue;
      if (Ready <= 0)
        continue; // The next turn sees the deadline.
    }
    const ssize_t Got = ::read(Fd, P, N);
    if (Got < 0 && errno == EINTR)
      continue;
    if (Got <= 0)
      return false;
    P += Got;
    N -= static_cast<size_t>(Got);
  }
  return true;
}

bool readString(int Fd, std::string &S, uint64_t Max,
                const std::optional<Clock::time_point> &Deadline, bool &TimedOut, bool &TooLong) {
  uint64_t N = 0;
  if (!readAll(Fd, reinterpret_cast<char *>(&N), sizeof N, Deadline, TimedOut))
    return false;
  if (N > Max)
    return TooLong = true, false;
  S.resize(N);
  return readAll(Fd, S.data(), N, Deadline, TimedOut);
}

/// Reads one message of at most \p Max bytes in all.
bool readMessage(int Fd, std::vector<std::string> &Fields, uint64_t Max,
                 const std::optional<Clock::time_point> &Deadline, bool &TimedOut, bool &TooLong) {
  std::string Count;
  if (!readString(Fd, Count, 20, Deadline, TimedOut, TooLong))
    return false;
  const uint64_t N = std::strtoull(Count.c_str(), nullptr, 10);
  if (N > 16)
    return TooLong = true, false;
  Fields.assign(N, {});
  for (std::string &F : Fields) {
    if (!readString(Fd, F, Max, Deadline, TimedOut, TooLong))
      return false;
    Max -= F.size();
  }
  return true;
}

bool writeAll(int Fd, const std::string &Buf) {
  const char *P = Buf.data();
  size_t N = Buf.size();
  while (N) {
    // MSG_NOSIGNAL: a helper that died is an error here, never a SIGPIPE
    // in the host.
    const ssize_t Put = ::send(Fd, P, N, MSG_NOSIGNAL);
    if (Put < 0 && errno == EINTR)
      continue;
    if (Put <= 0)
      return false;
    P += Put;
    N -= static_cast<size_t>(Put);
  }
  return true;
}

bool executable(const std::string &Path) { return ::access(Path.c_str(), X_OK) == 0; }

std::string directoryOf(const std::string &Path) {
  const size_t Slash = Path.rfind('/');
  return Slash == std::string::npos ? "." : Path.substr(0, Slash);
}

/// Where the helper program is, or "" (see EpilogueLimits::Helper).
std::string findHelper(const EpilogueLimits &Limits, std::string &Searched) {
  constexpr const char *Name = "gatherjit-epilogue";
  if (!Limits.Helper.empty())
    return Searched = Limits.Helper, executable(Limits.Helper) ? Limits.Helper : "";
  if (const char *Env = std::getenv("GATHERJIT_EPILOGUE_HELPER"); Env && *Env)
    return Searched = Env, executable(Env) ? Env : "";
  std::vector<std::string> Dirs;
  Dl_info Info;
  if (::dladdr(reinterpret_cast<void *>(&findHelper), &Info) && Info.dli_fname &&
      std::strchr(Info.dli_fname, '/'))
    Dirs.push_back(directoryOf(Info.dli_fname));
  char Self[4096];
  if (const ssize_t N = ::readlink("/proc/self/exe", Self, sizeof Self - 1); N > 0)
    Dirs.push_back(directoryOf(std::string(Self, static_cast<size_t>(N))));
  std::vector<std::string> Candidates;
  for (const std::string &D : Dirs)
    for (const char *Sub : {"/", "/../bin/", "/../libexec/gatherjit/"})
      Candidates.push_back(D + Sub + Name);
#ifdef GATHERJIT_BUILD_DIR
  Candidates.push_back(std::string(GATHERJIT_BUILD_DIR) + "/" + Name);
#endif
  for (const std::string &C : Candidates)
    if (executable(C))
      return C;
  Searched = Dirs.empty() ? std::string(Name) : Dirs.front();
  return "";
}

/// The one helper of this process (never destroyed: the helper's input
/// ends with the host, and so does its loop).
class Helper {
public:
  Expected<std::vector<std::string>> exchange(const std::vector<std::string> &Request,
                                              const EpilogueLimits &Limits) {
    if (Pid > 0 && (Limits.MemoryBytes != Memory || Limits.Helper != Program))
      stop();
    if (Pid <= 0)
      if (Status S = start(Limits); !S)
        return S;
    const auto Deadline =
        Clock::now() + std::chrono::duration_cast<Clock::duration>(
                           std::chrono::duration<double>(std::max(Limits.Seconds, 0.001)));
    std::vector<std::string> Answer;
    bool TimedOut = false, TooLong = false;
    if (writeAll(Fd, message(Request)) &&
        readMessage(Fd, Answer, Limits.OutputBytes + 4096, Deadline, TimedOut, TooLong))
      return Answer;
    // The helper is stopped whatever went wrong: it may be mid-answer.
    const int Wait = stop(/*Kill=*/TimedOut || TooLong);
    std::string Why;
    if (TimedOut)
      Why = "it took longer than " + seconds(Limits.Seconds) + " (the epilogue's time limit)";
    else if (TooLong)
      Why = "its output passed " + std::to_string(Limits.OutputBytes) +
            " bytes (the epilogue's output limit)";
    else
      Why = deathOf(Wait, Limits);
    return Status::invalidArgument("the epilogue's compile was stopped: " + Why);
  }

private:
  static std::string seconds(double S) {
    std::string T = std::to_string(S);
    T.erase(T.find_last_not_of('0') + 1);
    if (!T.empty() && T.back() == '.')
      T.pop_back();
    return T + " s";
  }

  static std::string deathOf(int Wait, const EpilogueLimits &Limits) {
    if (Wait < 0)
      return "the helper process ended";
    if (WIFEXITED(Wait) && WEXITSTATUS(Wait) == ExitOutOfMemory)
      return "it ran out of memory (the epilogue's limit is " +
             std::to_string(Limits.MemoryBytes >> 20) + " MiB)";
    if (WIFEXITED(Wait))
      return "the helper process exited with status " + std::to_string(WEXITSTATUS(Wait));
    if (WIFSIGNALED(Wait)) {
      const int Sig = WTERMSIG(Wait);
      const char *Name = sigabbrev_np(Sig);
      std::string Text = "clang crashed (signal " + std::string(Name ? Name : "?") + ")";
      if (Sig == SIGSEGV || Sig == SIGBUS)
        Text += "; an expression or declaration nested too deep overflows its stack";
      return Text;
    }
    return "the helper process ended";
  }

  Status start(const EpilogueLimits &Limits) {
    std::string Searched;
    const std::string Path = findHelper(Limits, Searched);
    if (Path.empty())
      return Status::unsupported(
          "epilogues are compiled by the helper program gatherjit-epilogue, which was not "
          "found (looked at " +
          quote(Searched) +
          "); set GATHERJIT_EPILOGUE_HELPER to its path, or compile in this process "
          "(EpilogueLimits::Isolated = false)");
    int Pair[2];
    if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, Pair) != 0)
      return Status::ioError(std::string("epilogue helper: socketpair: ") + std::strerror(errno));
    posix_spawn_file_actions_t Files;
    posix_spawn_file_actions_init(&Files);
    posix_spawn_file_actions_adddup2(&Files, Pair[1], 0);
    posix_spawn_file_actions_adddup2(&Files, Pair[1], 1);
    posix_spawn_file_actions_addopen(&Files, 2, "/dev/null", O_WRONLY, 0);
    posix_spawnattr_t Attr;
    posix_spawnattr_init(&Attr);
    // The helper starts with default signal handling and none blocked,
    // whatever the host set.
    sigset_t None, All;
    sigemptyset(&None);
    sigfillset(&All);
    posix_spawnattr_setsigmask(&Attr, &None);
    posix_spawnattr_setsigdefault(&Attr, &All);
    posix_spawnattr_setflags(&Attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    const std::string MemoryArg = std::to_string(Limits.MemoryBytes);
    std::vector<char *> Argv = {const_cast<char *>(Path.c_str()), const_cast<char *>("--memory"),
                                const_cast<char *>(MemoryArg.c_str()), nullptr};
    pid_t Child = 0;
    const int Err = ::posix_spawn(&Child, Path.c_str(), &Files, &Attr, Argv.data(), environ);
    posix_spawn_file_actions_destroy(&Files);
    posix_spawnattr_destroy(&Attr);
    ::close(Pair[1]);
    if (Err != 0) {
      ::close(Pair[0]);
      return Status::unsupported("epilogue helper " + quote(Path) +
                                 " did not start: " + std::strerror(Err));
    }
    Pid = Child;
    Fd = Pair[0];
    Memory = Limits.MemoryBytes;
    Program = Limits.Helper;
    return Status::ok();
  }

  /// Ends the helper (closing its socket ends its loop; \p Kill first for
  /// one that may be busy) and returns its wait status, or -1.
  int stop(bool Kill = false) {
    if (Pid <= 0)
      return -1;
    if (Kill)
      ::kill(Pid, SIGKILL);
    ::close(Fd);
    int Wait = -1;
    while (::waitpid(Pid, &Wait, 0) < 0 && errno == EINTR) {
    }
    Pid = -1;
    Fd = -1;
    return Wait;
  }

  pid_t Pid = -1;
  int Fd = -1;
  uint64_t Memory = 0;
  std::string Program;
};

std::mutex HelperMutex;

std::vector<std::string> request(const Epilogue &E, const EpilogueTarget &T) {
  return {E.FileName,
          E.Function,
          E.Source,
          std::string(E.Params.begin(), E.Params.end()),
          T.Triple,
          T.Cpu,
          T.Features,
          std::to_string(T.RowIn),
          std::to_string(T.RowOut),
          E.Checked ? "1" : "0"};
}

std::vector<std::string> answer(const Expected<std::shared_ptr<const EpilogueCode>> &Code) {
  if (!Code)
    return {std::to_string(static_cast<int>(Code.status().code())), Code.status().message()};
  const EpilogueSignature &S = (*Code)->Signature;
  return {"0",
          std::to_string(static_cast<int>(S.Kind)),
          std::to_string(static_cast<int>(S.In)),
          std::to_string(static_cast<int>(S.Out)),
          S.HasParams ? "1" : "0",
          S.Checked ? "1" : "0",
          (*Code)->Bitcode};
}

int field(const std::string &S) { return static_cast<int>(std::strtol(S.c_str(), nullptr, 10)); }

} // namespace

Expected<std::shared_ptr<const EpilogueCode>>
compileEpilogue(const Epilogue &E, const EpilogueTarget &T, const EpilogueLimits &Limits) {
  // Without clang's libraries here, only a helper named explicitly (one
  // from a build that has them) can compile.
  const char *Env = std::getenv("GATHERJIT_EPILOGUE_HELPER");
  const bool Named = !Limits.Helper.empty() || (Env && *Env);
  if (!epiloguesSupported() && !(Limits.Isolated && Named))
    return compileEpilogueHere(E, T); // Unsupported.
  for (auto [What, Bytes] : {std::pair{"source", E.Source.size()}, {"parameters", E.Params.size()}})
    if (Bytes > MaxEpilogueBytes)
      return Status::invalidArgument("the epilogue's " + std::string(What) + " is " +
                                     std::to_string(Bytes) + " bytes, more than the " +
                                     std::to_string(MaxEpilogueBytes) + " an epilogue may have");
  if (!Limits.Isolated)
    return compileEpilogueHere(E, T);
  static Helper *TheHelper = new Helper;
  std::vector<std::string> Answer;
  {
    std::lock_guard<std::mutex> Lock(HelperMutex);
    Expected<std::vector<std::string>> Got = TheHelper->exchange(request(E, T), Limits);
    if (!Got)
      return Got.status();
    Answer = Got.take();
  }
  if (Answer.size() == 2 && Answer[0] != "0") {
    const int Code = field(Answer[0]);
    const std::string &Text = Answer[1];
    switch (static_cast<ErrorCode>(Code)) {
    case ErrorCode::InvalidArgument:
      return Status::invalidArgument(Text);
    case ErrorCode::Unsupported:
      return Status::unsupported(Text);
    default:
      return Status::internal(Text);
    }
  }
  if (Answer.size() != AnswerFields || Answer[0] != "0")
    return Status::internal("the epilogue helper answered out of turn");
  auto Code = std::make_shared<EpilogueCode>();
  Code->Signature.Kind = static_cast<EpilogueKind>(field(Answer[1]));
  Code->Signature.In = static_cast<DataType>(field(Answer[2]));
  Code->Signature.Out = static_cast<DataType>(field(Answer[3]));
  Code->Signature.HasParams = Answer[4] == "1";
  Code->Signature.Checked = Answer[5] == "1";
  Code->Signature.Key = epilogueKey(E, T);
  Code->Function = E.Function;
  Code->Params = E.Params;
  Code->Bitcode = std::move(Answer[6]);
  return std::shared_ptr<const EpilogueCode>(std::move(Code));
}

int epilogueHelperMain(int Argc, char **Argv) {
  uint64_t Memory = 0;
  for (int I = 1; I + 1 < Argc; I += 2)
    if (std::strcmp(Argv[I], "--memory") == 0)
      Memory = std::strtoull(Argv[I + 1], nullptr, 10);
  if (::isatty(0)) {
    std::fprintf(stderr, "gatherjit-epilogue compiles epilogues for gatherjit's library; "
                         "it is not run by hand\n");
    return 2;
  }
  // No core files and no files written; an allocation past the address
  // space limit ends the process with the status the host reads as out of
  // memory (clang and LLVM cannot recover from one).
  const rlimit Zero = {0, 0};
  ::setrlimit(RLIMIT_CORE, &Zero);
  ::setrlimit(RLIMIT_FSIZE, &Zero);
  if (Memory) {
    const rlimit As = {Memory, Memory};
    ::setrlimit(RLIMIT_AS, &As);
  }
  std::set_new_handler([] { ::_exit(ExitOutOfMemory); });
  llvm::install_bad_alloc_error_handler(
      [](void *, const char *, bool) { ::_exit(ExitOutOfMemory); });
  std::signal(SIGPIPE, SIG_IGN);
  const int In = 0, Out = 1;
  for (;;) {
    std::vector<std::string> Req;
    bool TimedOut = false, TooLong = false;
    if (!readMessage(In, Req, RequestBytes, std::nullopt, TimedOut, TooLong))
      return TooLong ? 2 : 0;
    std::vector<std::string> Reply;
    if (Req.size() != RequestFields) {
      Reply = {std::to_string(static_cast<int>(ErrorCode::Internal)),
               "the epilogue helper got a malformed request"};
    } else {
      Epilogue E;
      E.FileName = Req[0];
      E.Function = Req[1];
      E.Source = Req[2];
      E.Params.assign(Req[3].begin(), Req[3].end());
      E.Checked = Req[9] == "1";
      EpilogueTarget T{Req[4], Req[5], Req[6], std::strtoull(Req[7].c_str(), nullptr, 10),
                       std::strtoull(Req[8].c_str(), nullptr, 10)};
      Reply = answer(compileEpilogueHere(E, T));
    }
    if (!writeAll(Out, message(Reply)))
      return 1;
  }
}

} // namespace gatherjit
