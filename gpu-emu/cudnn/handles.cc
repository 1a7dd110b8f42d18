// cuDNN handles: create, destroy, and the stream later calls run on. A handle needs a device, as
// cuDNN's does: without one (no GPU spec, no simulator) cudnnCreate says
// CUDNN_STATUS_NOT_INITIALIZED.
#include "cudnn-common.h"

using namespace eidolon::gpu;

// Creates a handle bound to the legacy default stream.
EIDOLON_EXPORT cudnnStatus_t
cudnnCreate(cudnnHandle_t* handle)
{
    if (!handle)
    {
        return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    }
    {
        ApiCall call(CallKind::Untimed);
        if (call.Emu().DeviceCount() == 0)
        {
            return CUDNN_STATUS_NOT_INITIALIZED;
        }
    }
    *handle = new cudnnContext();
    return CUDNN_STATUS_SUCCESS;
}

// Destroys a handle.
EIDOLON_EXPORT cudnnStatus_t
cudnnDestroy(cudnnHandle_t handle)
{
    if (!handle)
    {
        return CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
    }
    delete handle;
    return CUDNN_STATUS_SUCCESS;
}

// Sets the stream later calls on this handle run on.
EIDOLON_EXPORT cudnnStatus_t
cudnnSetStream(cudnnHandle_t handle, cudaStream_t stream)
{
    return dnn::Reply::SetField(handle, &cudnnContext::stream, stream);
}

// The handle's stream.
EIDOLON_EXPORT cudnnStatus_t
cudnnGetStream(cudnnHandle_t handle, cudaStream_t* stream)
{
    return handle ? dnn::Reply::Store(stream, handle->stream) : CUDNN_STATUS_BAD_PARAM_NULL_POINTER;
}
