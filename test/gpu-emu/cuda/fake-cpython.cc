// Stands in for CPython's PyThread_exit_thread (thread-exit.cu): the function CPython 3.9 to 3.13
// calls to end a thread that wants the GIL after finalization began. Only its name matters.
#include <pthread.h>

extern "C" __attribute__((visibility("default"))) void
PyThread_exit_thread()
{
    pthread_exit(nullptr);
}
