/* The pod sandbox's one process on the local cluster's real node (scripts/tools/node-images.sh builds it,
 * statically linked, into the pause image the kubelet and containerd name). It holds the pod's namespaces
 * open and does nothing else: as PID 1 of a pod that shares its process namespace it reaps the children the
 * pod's containers leave behind, and it exits 0 at once on SIGTERM or SIGINT (PID 1 of a namespace has no
 * default action for them, so without a handler the runtime would wait for its SIGKILL). Written for the
 * project. */
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

static void leave(int sig) {
  (void)sig;
  _exit(0);
}

static void reap(int sig) {
  (void)sig;
  while (waitpid(-1, 0, WNOHANG) > 0) {
  }
}

int main(void) {
  struct sigaction stop = {0}, child = {0};
  stop.sa_handler = leave;
  child.sa_handler = reap;
  child.sa_flags = SA_NOCLDSTOP | SA_RESTART;
  if (sigaction(SIGTERM, &stop, 0) || sigaction(SIGINT, &stop, 0) || sigaction(SIGCHLD, &child, 0)) {
    return 1;
  }
  for (;;) {
    pause();
  }
}
