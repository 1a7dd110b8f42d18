// Per-thread state that needs a destructor, without a thread_local that has one.
//
// The first use in a thread of a thread_local object with a destructor registers that destructor
// (__cxa_thread_atexit_impl), which takes the dynamic loader's lock. A thread that does so while it
// holds the emulator lock, or on a path the simulator's I/O thread runs (clock_gettime), deadlocks
// with a thread that holds the loader lock inside dlopen() and waits for the emulator lock in
// __cudaRegisterFunction (what importing torch does). So such state lives on the heap behind a
// POSIX thread-specific key, whose destructor runs at thread exit without the loader lock, and
// every thread_local in gpu-emu is trivially destructible (gpu-emu/README.md "Threads and the
// dynamic loader").
#pragma once

#include <pthread.h>

namespace eidolon::gpu
{

template<class T> class PerThread
{
public:
    PerThread()
    {
        pthread_key_create(&m_key, [](void* value) { delete static_cast<T*>(value); });
    }
    PerThread(const PerThread&) = delete;
    PerThread& operator=(const PerThread&) = delete;

    // The calling thread's value, created (value-initialized) on first use: this allocates.
    T& Get()
    {
        void* value = pthread_getspecific(m_key);
        if (!value)
        {
            value = new T();
            pthread_setspecific(m_key, value);
        }
        return *static_cast<T*>(value);
    }

    // The calling thread's value, or null before its first Get (never allocates: safe inside a
    // clock read that an allocator may make).
    T* IfCreated() const { return static_cast<T*>(pthread_getspecific(m_key)); }

private:
    pthread_key_t m_key{};
};

} // namespace eidolon::gpu
