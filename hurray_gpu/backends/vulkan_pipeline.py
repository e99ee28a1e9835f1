"""Vulkan compute pipelines: shader module, descriptor layout, push constants, dispatch.

Executes a list of dispatches (one per chunk) in a single command buffer and waits for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from hurray_gpu.backends.vulkan_context import VulkanContext, call


@dataclass(frozen=True)
class Dispatch:
    """One vkCmdDispatch: buffer windows per binding, push-constant bytes and group counts."""

    windows: tuple[tuple[Any, int, int], ...]  # (VkBuffer, byte offset, byte range) per binding
    push: bytes
    groups: tuple[int, int, int]


class VulkanPipeline:
    """A compute pipeline for one SPIR-V module with ``n_buffers`` storage-buffer bindings.

    Args:
        ctx: the device context.
        spirv: the SPIR-V binary (a multiple of 4 bytes).
        n_buffers: storage buffers bound at set 0, bindings 0..n-1.
        push_size: bytes of push constants (0 for none); at most maxPushConstantsSize.
        entry: the entry point name.
    """

    def __init__(
        self, ctx: VulkanContext, spirv: bytes, n_buffers: int, push_size: int,
        entry: str = "main",
    ) -> None:
        self.ctx, self.n_buffers, self.push_size = ctx, n_buffers, push_size
        vk, dev = ctx.vk, ctx.device
        self._handles: list[tuple[str, Any]] = []
        module_info = ctx._info("SHADER_MODULE_CREATE_INFO", codeSize=len(spirv), pCode=spirv)
        self.module = self._own("vkDestroyShaderModule", call(
            vk.vkCreateShaderModule, dev, module_info, None))
        self.set_layout = self._own("vkDestroyDescriptorSetLayout", self._create_set_layout())
        self.layout = self._own("vkDestroyPipelineLayout", self._create_layout())
        stage = ctx._info(
            "PIPELINE_SHADER_STAGE_CREATE_INFO", stage=vk.VK_SHADER_STAGE_COMPUTE_BIT,
            module=self.module, pName=entry,
        )
        info = ctx._info("COMPUTE_PIPELINE_CREATE_INFO", stage=stage, layout=self.layout)
        infos = [info]
        self.pipeline = self._own("vkDestroyPipeline", call(
            vk.vkCreateComputePipelines, dev, None, 1, infos, None)[0])

    def _own(self, destroy: str, handle: Any) -> Any:
        self._handles.append((destroy, handle))
        return handle

    def _create_set_layout(self) -> Any:
        vk, ctx = self.ctx.vk, self.ctx
        bindings = [
            vk.VkDescriptorSetLayoutBinding(
                binding=i, descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                descriptorCount=1, stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT,
            )
            for i in range(self.n_buffers)
        ]
        info = ctx._info(
            "DESCRIPTOR_SET_LAYOUT_CREATE_INFO", bindingCount=len(bindings),
            pBindings=bindings or None,
        )
        return call(vk.vkCreateDescriptorSetLayout, ctx.device, info, None)

    def _create_layout(self) -> Any:
        vk, ctx = self.ctx.vk, self.ctx
        layouts = [self.set_layout]
        ranges = [vk.VkPushConstantRange(
            stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT, offset=0, size=self.push_size)]
        info = ctx._info(
            "PIPELINE_LAYOUT_CREATE_INFO", setLayoutCount=1, pSetLayouts=layouts,
            pushConstantRangeCount=1 if self.push_size else 0,
            pPushConstantRanges=ranges if self.push_size else None,
        )
        return call(vk.vkCreatePipelineLayout, ctx.device, info, None)

    def run(self, dispatches: list[Dispatch]) -> None:
        """Record every dispatch into one command buffer and submit it on the current stream."""
        if not dispatches:
            return
        ctx, vk = self.ctx, self.ctx.vk
        pool = self._create_pool(len(dispatches))
        try:
            sets = self._write_sets(pool, dispatches)
        except BaseException:
            vk.vkDestroyDescriptorPool(ctx.device, pool, None)
            raise
        # On a non-default stream the work runs later: the pool lives until it completed.
        ctx.submit(lambda cmd: self._record(cmd, sets, dispatches),
                   cleanup=lambda: vk.vkDestroyDescriptorPool(ctx.device, pool, None),
                   wait=False)

    def _create_pool(self, count: int) -> Any:
        vk, ctx = self.ctx.vk, self.ctx
        sizes = [vk.VkDescriptorPoolSize(
            type=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptorCount=max(1, count * self.n_buffers))]
        info = ctx._info(
            "DESCRIPTOR_POOL_CREATE_INFO", maxSets=count, poolSizeCount=1, pPoolSizes=sizes
        )
        return call(vk.vkCreateDescriptorPool, ctx.device, info, None)

    def _write_sets(self, pool: Any, dispatches: list[Dispatch]) -> list[Any]:
        vk, ctx = self.ctx.vk, self.ctx
        layouts = [self.set_layout] * len(dispatches)
        info = ctx._info(
            "DESCRIPTOR_SET_ALLOCATE_INFO", descriptorPool=pool,
            descriptorSetCount=len(dispatches), pSetLayouts=layouts,
        )
        sets = list(call(vk.vkAllocateDescriptorSets, ctx.device, info))
        if self.n_buffers == 0:
            return sets
        # Every nested struct stays referenced until vkUpdateDescriptorSets returns (cffi).
        infos, writes = [], []
        for dset, dispatch in zip(sets, dispatches, strict=True):
            for binding, (buffer, offset, size) in enumerate(dispatch.windows):
                buffer_info = [vk.VkDescriptorBufferInfo(buffer=buffer, offset=offset, range=size)]
                infos.append(buffer_info)
                writes.append(ctx._info(
                    "WRITE_DESCRIPTOR_SET", dstSet=dset, dstBinding=binding,
                    descriptorCount=1, descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                    pBufferInfo=buffer_info,
                ))
        vk.vkUpdateDescriptorSets(ctx.device, len(writes), writes, 0, None)
        return sets

    def _record(self, cmd: Any, sets: list[Any], dispatches: list[Dispatch]) -> None:
        vk = self.ctx.vk
        vk.vkCmdBindPipeline(cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, self.pipeline)
        barrier = [self.ctx._info(
            "MEMORY_BARRIER", srcAccessMask=vk.VK_ACCESS_SHADER_WRITE_BIT,
            dstAccessMask=vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_SHADER_WRITE_BIT,
        )]
        for i, (dset, dispatch) in enumerate(zip(sets, dispatches, strict=True)):
            if i:  # chunks may overlap at window edges; keep them ordered
                vk.vkCmdPipelineBarrier(
                    cmd, vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                    vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, barrier, 0, None, 0, None)
            vk.vkCmdBindDescriptorSets(
                cmd, vk.VK_PIPELINE_BIND_POINT_COMPUTE, self.layout, 0, 1, [dset], 0, None)
            if self.push_size:
                data = self.ctx.vk.ffi.new("char[]", dispatch.push)
                vk.vkCmdPushConstants(
                    cmd, self.layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0, self.push_size, data)
            vk.vkCmdDispatch(cmd, *dispatch.groups)

    def close(self) -> None:
        """Destroy the pipeline, layouts and shader module (idempotent)."""
        handles, self._handles = self._handles, []
        for destroy, handle in reversed(handles):
            getattr(self.ctx.vk, destroy)(self.ctx.device, handle, None)
