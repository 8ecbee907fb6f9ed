//! Compute pipelines, built once per device, and the recorded dispatches
//! ("ops") that the forward pass replays.

use std::borrow::Cow;
use std::collections::HashMap;
use std::rc::Rc;

use crate::error::{Error, Result};
use crate::quant::GgmlType;

use super::Gpu;

const DEQUANT: &str = include_str!("../../shaders/dequant.wgsl");
const MATVEC: &str = include_str!("../../shaders/matvec.wgsl");
const EMBED: &str = include_str!("../../shaders/embed.wgsl");
const RMSNORM: &str = include_str!("../../shaders/rmsnorm.wgsl");
const ROPE: &str = include_str!("../../shaders/rope.wgsl");
const ATTENTION: &str = include_str!("../../shaders/attention.wgsl");
const ELEMENTWISE: &str = include_str!("../../shaders/elementwise.wgsl");
const ARGMAX: &str = include_str!("../../shaders/argmax.wgsl");

/// Workgroups along x for flattened and row-indexed dispatches; kept under
/// WebGPU's guaranteed 65535 per dimension, the rest goes to y.
pub const NX: u32 = 32768;

/// The weight formats the kernels decode (all ggml weight formats we load).
pub fn supported(ty: GgmlType) -> bool {
    !matches!(ty, GgmlType::Q8_1 | GgmlType::Q8_K)
}

/// How many workgroups an op launches for a batch of `n` tokens.
#[derive(Debug, Clone, Copy)]
pub enum Shape {
    Fixed([u32; 3]),
    /// The given dims with dimension `axis` replaced by the token count.
    PerToken([u32; 3], usize),
    /// `n * width` elements, 64 per workgroup, spread over x then y.
    Flat(u32),
}

impl Shape {
    pub fn groups(self, n: u32) -> [u32; 3] {
        match self {
            Shape::Fixed(g) => g,
            Shape::PerToken(mut g, axis) => {
                g[axis] = n;
                g
            }
            Shape::Flat(width) => {
                let groups = (n * width).div_ceil(64);
                [groups.min(NX), groups.div_ceil(NX), 1]
            }
        }
    }
}

pub struct Op {
    pub pipeline: Rc<wgpu::ComputePipeline>,
    pub bind: wgpu::BindGroup,
    pub shape: Shape,
}

pub fn encode(pass: &mut wgpu::ComputePass<'_>, ops: &[Op], n: u32) {
    for op in ops {
        let [x, y, z] = op.shape.groups(n);
        if x == 0 || y == 0 || z == 0 {
            continue;
        }
        pass.set_pipeline(&op.pipeline);
        pass.set_bind_group(0, &op.bind, &[]);
        pass.dispatch_workgroups(x, y, z);
    }
}

pub struct Kernels {
    matvec: HashMap<GgmlType, Rc<wgpu::ComputePipeline>>,
    embed: HashMap<GgmlType, Rc<wgpu::ComputePipeline>>,
    pub rmsnorm: Rc<wgpu::ComputePipeline>,
    pub rope: Rc<wgpu::ComputePipeline>,
    pub kv_store: Rc<wgpu::ComputePipeline>,
    pub attention: Rc<wgpu::ComputePipeline>,
    pub silu_mul: Rc<wgpu::ComputePipeline>,
    pub add_bias: Rc<wgpu::ComputePipeline>,
    pub argmax: Rc<wgpu::ComputePipeline>,
}

fn pipeline(gpu: &Gpu, label: &str, src: &str, entry: &str) -> Rc<wgpu::ComputePipeline> {
    let module = gpu
        .device
        .create_shader_module(wgpu::ShaderModuleDescriptor {
            label: Some(label),
            source: wgpu::ShaderSource::Wgsl(Cow::Borrowed(src)),
        });
    Rc::new(
        gpu.device
            .create_compute_pipeline(&wgpu::ComputePipelineDescriptor {
                label: Some(label),
                layout: None,
                module: &module,
                entry_point: Some(entry),
                compilation_options: Default::default(),
                cache: None,
            }),
    )
}

/// A kernel file followed by the decoders and the alias that picks `ty`'s.
fn compose(kernel: &str, ty: GgmlType) -> String {
    format!(
        "{kernel}\n{DEQUANT}\nfn load_weight(rb: u32, k: u32) -> f32 {{\n    return w_{}(rb, k);\n}}\n",
        ty.name().to_ascii_lowercase()
    )
}

impl Kernels {
    /// Build the format-independent pipelines. Shader errors surface through
    /// the caller's error scope.
    pub fn new(gpu: &Gpu) -> Kernels {
        Kernels {
            matvec: HashMap::new(),
            embed: HashMap::new(),
            rmsnorm: pipeline(gpu, "rmsnorm", RMSNORM, "main"),
            rope: pipeline(gpu, "rope", ROPE, "main"),
            kv_store: pipeline(gpu, "kv_store", ATTENTION, "store"),
            attention: pipeline(gpu, "attention", ATTENTION, "main"),
            silu_mul: pipeline(gpu, "silu_mul", ELEMENTWISE, "silu_mul"),
            add_bias: pipeline(gpu, "add_bias", ELEMENTWISE, "add_bias"),
            argmax: pipeline(gpu, "argmax", ARGMAX, "main"),
        }
    }

    fn unsupported(ty: GgmlType) -> Error {
        Error::UnsupportedTensorType {
            tensor: "(GPU weight)".into(),
            type_name: ty.name().into(),
        }
    }

    pub fn matvec(&mut self, gpu: &Gpu, ty: GgmlType) -> Result<Rc<wgpu::ComputePipeline>> {
        if !supported(ty) {
            return Err(Self::unsupported(ty));
        }
        Ok(self
            .matvec
            .entry(ty)
            .or_insert_with(|| pipeline(gpu, "matvec", &compose(MATVEC, ty), "main"))
            .clone())
    }

    pub fn embed(&mut self, gpu: &Gpu, ty: GgmlType) -> Result<Rc<wgpu::ComputePipeline>> {
        if !supported(ty) {
            return Err(Self::unsupported(ty));
        }
        Ok(self
            .embed
            .entry(ty)
            .or_insert_with(|| pipeline(gpu, "embed", &compose(EMBED, ty), "main"))
            .clone())
    }
}

/// A bind group for group 0 of `pipeline`, binding each buffer whole.
pub fn bind(
    gpu: &Gpu,
    pipeline: &wgpu::ComputePipeline,
    bufs: &[(u32, &wgpu::Buffer)],
) -> wgpu::BindGroup {
    let entries: Vec<wgpu::BindGroupEntry> = bufs
        .iter()
        .map(|&(binding, b)| wgpu::BindGroupEntry {
            binding,
            resource: b.as_entire_binding(),
        })
        .collect();
    gpu.device.create_bind_group(&wgpu::BindGroupDescriptor {
        label: None,
        layout: &pipeline.get_bind_group_layout(0),
        entries: &entries,
    })
}
