/* libeidolon-redirect.so: an rtld-audit module (LD_AUDIT, see rtld-audit(7)) that makes a rank
 * process load gpu-emu's libraries wherever the program asks for NVIDIA's.
 *
 * Why an audit module: PyTorch's wheels reach NVIDIA's libraries in two ways LD_LIBRARY_PATH cannot
 * override. Their DT_NEEDED entries are searched along a DT_RPATH ($ORIGIN/../../nvidia/cu13/lib,
 * ...) that precedes LD_LIBRARY_PATH, and torch's _preload_cuda_deps() dlopens the wheel files by
 * full path. LD_PRELOAD of ours would still leave NVIDIA's copies loaded beside ours (a full path
 * never matches an already loaded soname). la_objsearch sees every name before the loader searches
 * for it, soname or path, and can replace it.
 *
 * The list of what is replaced is the directory this module lies in: a request whose file name
 * (the part after the last '/') is the name of a file here (libcudart.so.13, libnccl.so.2, ...)
 * loads that file instead. Adding a replacement library to build/lib/gpu-emu/ is all it takes to
 * redirect it; everything else (NVIDIA's cuSPARSE, cuFFT, NVRTC, ...) loads as asked.
 * EIDOLON_REDIRECT_TRACE=1 prints each redirection on stderr.
 *
 * This module runs inside the dynamic loader's own namespace, before the program: it uses only
 * libc, allocates nothing after start-up and never calls back into the program. */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum
{
    kMaxReplacements = 128,
    kMaxPath = 4096
};

static char g_directory[kMaxPath];               /* where this module and ours lie, with '/' */
static char g_names[kMaxReplacements][256];      /* file names of the replacement libraries */
static char g_paths[kMaxReplacements][kMaxPath]; /* their full paths */
static int g_count = 0;
static int g_trace = 0;

/* A shared library's file name: lib*.so or lib*.so.* (not this module itself). */
static int
IsLibraryName(const char* name)
{
    return strncmp(name, "lib", 3) == 0 && strstr(name, ".so") != NULL &&
           strcmp(name, "libeidolon-redirect.so") != 0;
}

static void
ReadReplacements(void)
{
    Dl_info info;
    if (!dladdr((void*)&ReadReplacements, &info) || !info.dli_fname)
    {
        return;
    }
    const char* slash = strrchr(info.dli_fname, '/');
    size_t length = slash ? (size_t)(slash - info.dli_fname) + 1 : 0;
    if (length == 0 || length >= sizeof g_directory)
    {
        return;
    }
    memcpy(g_directory, info.dli_fname, length);
    g_directory[length] = '\0';
    DIR* directory = opendir(g_directory);
    if (!directory)
    {
        return;
    }
    for (struct dirent* entry; (entry = readdir(directory)) != NULL && g_count < kMaxReplacements;)
    {
        if (IsLibraryName(entry->d_name) && strlen(entry->d_name) < sizeof g_names[0] &&
            length + strlen(entry->d_name) < kMaxPath)
        {
            size_t nameLength = strlen(entry->d_name);
            memcpy(g_names[g_count], entry->d_name, nameLength + 1);
            memcpy(g_paths[g_count], g_directory, length);
            memcpy(g_paths[g_count] + length, entry->d_name, nameLength + 1);
            ++g_count;
        }
    }
    closedir(directory);
}

unsigned int
la_version(unsigned int version)
{
    const char* trace = getenv("EIDOLON_REDIRECT_TRACE");
    g_trace = trace && trace[0] == '1';
    ReadReplacements();
    return version < LAV_CURRENT ? version : LAV_CURRENT;
}

char*
la_objsearch(const char* name, uintptr_t* cookie, unsigned int flag)
{
    (void)cookie;
    if (flag != LA_SER_ORIG || name == NULL)
    {
        return (char*)name; /* only the name as asked is replaced, not each directory tried */
    }
    const char* slash = strrchr(name, '/');
    const char* file = slash ? slash + 1 : name;
    if (slash && strncmp(name, g_directory, strlen(g_directory)) == 0 &&
        (size_t)(slash - name) + 1 == strlen(g_directory))
    {
        return (char*)name; /* already ours */
    }
    for (int k = 0; k < g_count; ++k)
    {
        if (strcmp(file, g_names[k]) == 0)
        {
            if (g_trace)
            {
                fprintf(stderr, "eidolon: loading %s for %s\n", g_paths[k], name);
            }
            return g_paths[k];
        }
    }
    return (char*)name;
}
