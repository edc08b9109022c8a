// JNI bridge for io.flix.index.gpu.JCudaNatives: lets go of the class references JCuda's driver library keeps.
//
// JCuda's JNI_OnLoad holds global references to classes of its own (CUdevice, CUdeviceptr, Pointer, ...) and never
// deletes them. A global reference is a root of the garbage collector, so the class loader that loaded JCuda can
// never be collected: in a Flink task manager every job that brings JCuda in its jar would leave its class loader
// behind. Once that loader is released (no JCuda call of it will follow), this deletes the references of the copy
// of the library that the loader loaded, found by the directory it was extracted to.
#include <jni.h>
#include <dlfcn.h>
#include <link.h>
#include <cstring>
#include <string>

namespace {

// JCuda 12.6's global class references (nm: the jclass globals of libJCudaDriver); a name it lacks is skipped.
const char* const CLASS_REFERENCES[] = {
    "CUdevice_class", "CUdeviceptr_class", "CUfunction_class", "CUgraphNode_class",
    "CUmemLocation_class", "CUaccessPolicyWindow_class", "Pointer_class",
};

struct Search {
    const char* prefix;
    std::string found;
};

int findUnder(struct dl_phdr_info* info, size_t, void* data) {
    Search* search = static_cast<Search*>(data);
    const char* name = info->dlpi_name;
    if (name != nullptr && std::strncmp(name, search->prefix, std::strlen(search->prefix)) == 0
        && std::strstr(name, "JCudaDriver") != nullptr) {
        search->found = name;
        return 1;
    }
    return 0;
}

}  // namespace

// Deletes the class references of the JCuda driver library loaded from `directory` (a path ending in '/').
// Returns how many were deleted, or -1 where no such library is loaded.
extern "C" JNIEXPORT jint JNICALL Java_io_flix_index_gpu_JCudaNatives_dropClassReferences(JNIEnv* env, jclass,
                                                                                           jstring directory) {
    const char* prefix = env->GetStringUTFChars(directory, nullptr);
    if (prefix == nullptr) return -1;
    Search search{prefix, std::string()};
    dl_iterate_phdr(findUnder, &search);
    env->ReleaseStringUTFChars(directory, prefix);
    if (search.found.empty()) return -1;
    void* library = dlopen(search.found.c_str(), RTLD_LAZY | RTLD_NOLOAD);
    if (library == nullptr) return -1;
    jint dropped = 0;
    for (const char* name : CLASS_REFERENCES) {
        jclass* reference = static_cast<jclass*>(dlsym(library, name));
        if (reference != nullptr && *reference != nullptr) {
            env->DeleteGlobalRef(*reference);
            *reference = nullptr;
            dropped++;
        }
    }
    dlclose(library);
    return dropped;
}
