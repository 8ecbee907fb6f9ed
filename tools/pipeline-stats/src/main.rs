//! pipeline-stats [--trusted-loops] DIR [FILTER]
//!
//! What the Vulkan driver says of each compute pipeline that
//! `webgguf gpu-profile --shaders DIR` wrote (DIR/index.tsv: file, label,
//! entry point): the statistics of VK_KHR_pipeline_executable_properties,
//! such as registers a thread, spilled bytes and workgroup memory. wgpu
//! does not expose them, and they decide how many workgroups share a
//! multiprocessor, which no timing shows directly.
//!
//! Each WGSL source goes to SPIR-V through the naga that wgpu 30 uses, with
//! the options wgpu's Vulkan backend passes where the device has robust
//! buffer access 2 (index checks `Restrict`, buffer accesses unchecked), so
//! the driver compiles the same program a `webgguf` run gives it (up to
//! wgpu's workgroup-memory zeroing, done natively here). FILTER keeps the
//! files whose label contains it. --trusted-loops compiles without naga's
//! loop counters, as `GpuTuning::loop_bounding` false does.
//!
//! Output: one line a statistic, tab-separated: file, label, entry point,
//! executable, statistic, value.

use ash::vk;
use std::ffi::CStr;
use std::path::Path;

type R<T> = Result<T, String>;

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let trusted = args.first().is_some_and(|a| a == "--trusted-loops");
    if trusted {
        args.remove(0);
    }
    if args.is_empty() || args.len() > 2 {
        eprintln!("usage: pipeline-stats [--trusted-loops] DIR [FILTER]");
        std::process::exit(2);
    }
    if let Err(e) = run(
        Path::new(&args[0]),
        args.get(1).map(String::as_str),
        trusted,
    ) {
        eprintln!("pipeline-stats: {e}");
        std::process::exit(1);
    }
}

fn run(dir: &Path, filter: Option<&str>, trusted: bool) -> R<()> {
    let index = std::fs::read_to_string(dir.join("index.tsv"))
        .map_err(|e| format!("{}: {e}", dir.join("index.tsv").display()))?;
    let vkd = Vk::new()?;
    eprintln!("device: {}", vkd.name);
    for line in index.lines() {
        let f: Vec<&str> = line.split('\t').collect();
        let [file, label, entry] = f[..] else {
            return Err(format!("index.tsv: not file, label, entry: {line:?}"));
        };
        if filter.is_some_and(|s| !label.contains(s)) {
            continue;
        }
        let src = std::fs::read_to_string(dir.join(file)).map_err(|e| format!("{file}: {e}"))?;
        match vkd.stats(&src, entry, !trusted) {
            Ok(rows) => {
                for (exe, name, value) in rows {
                    println!("{file}\t{label}\t{entry}\t{exe}\t{name}\t{value}");
                }
            }
            Err(e) => println!("{file}\t{label}\t{entry}\t-\terror\t{e}"),
        }
    }
    Ok(())
}

struct Vk {
    _entry: ash::Entry,
    instance: ash::Instance,
    device: ash::Device,
    exec: ash::khr::pipeline_executable_properties::Device,
    name: String,
}

impl Vk {
    fn new() -> R<Vk> {
        let entry = unsafe { ash::Entry::load() }.map_err(|e| format!("Vulkan loader: {e}"))?;
        let app = vk::ApplicationInfo::default().api_version(vk::API_VERSION_1_3);
        let instance = unsafe {
            entry.create_instance(
                &vk::InstanceCreateInfo::default().application_info(&app),
                None,
            )
        }
        .map_err(|e| format!("vkCreateInstance: {e}"))?;
        let phds = unsafe { instance.enumerate_physical_devices() }.map_err(|e| e.to_string())?;
        // A hardware device where there is one (the CPU ones last).
        let phd = *phds
            .iter()
            .min_by_key(|&&p| {
                let t = unsafe { instance.get_physical_device_properties(p) }.device_type;
                (t == vk::PhysicalDeviceType::CPU) as u8
            })
            .ok_or("no Vulkan device")?;
        let props = unsafe { instance.get_physical_device_properties(phd) };
        let name = props
            .device_name_as_c_str()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        let exts = unsafe { instance.enumerate_device_extension_properties(phd) }
            .map_err(|e| e.to_string())?;
        let has = |n: &CStr| exts.iter().any(|e| e.extension_name_as_c_str() == Ok(n));
        let pep = ash::khr::pipeline_executable_properties::NAME;
        if !has(pep) {
            return Err(format!("{name} lacks {}", pep.to_string_lossy()));
        }
        let mut names = vec![pep.as_ptr()];
        let coop = has(ash::khr::cooperative_matrix::NAME);
        if coop {
            names.push(ash::khr::cooperative_matrix::NAME.as_ptr());
        }
        // Every feature the device has (f16, int8, the integer dot product,
        // subgroups, the memory model the cooperative matrices need), so
        // that each kernel compiles as under wgpu.
        let mut check = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default();
        let mut c2 = vk::PhysicalDeviceFeatures2::default().push_next(&mut check);
        unsafe { instance.get_physical_device_features2(phd, &mut c2) };
        if check.pipeline_executable_info == vk::FALSE {
            return Err(format!("{name}: pipelineExecutableInfo is not supported"));
        }
        let mut f11 = vk::PhysicalDeviceVulkan11Features::default();
        let mut f12 = vk::PhysicalDeviceVulkan12Features::default();
        let mut f13 = vk::PhysicalDeviceVulkan13Features::default();
        let mut fpe = vk::PhysicalDevicePipelineExecutablePropertiesFeaturesKHR::default();
        let mut fcm = vk::PhysicalDeviceCooperativeMatrixFeaturesKHR::default();
        let mut f2 = vk::PhysicalDeviceFeatures2::default()
            .push_next(&mut f11)
            .push_next(&mut f12)
            .push_next(&mut f13)
            .push_next(&mut fpe);
        if coop {
            f2 = f2.push_next(&mut fcm);
        }
        unsafe { instance.get_physical_device_features2(phd, &mut f2) };
        let family = unsafe { instance.get_physical_device_queue_family_properties(phd) }
            .iter()
            .position(|q| q.queue_flags.contains(vk::QueueFlags::COMPUTE))
            .ok_or("no compute queue")? as u32;
        let prio = [1.0f32];
        let queues = [vk::DeviceQueueCreateInfo::default()
            .queue_family_index(family)
            .queue_priorities(&prio)];
        let info = vk::DeviceCreateInfo::default()
            .queue_create_infos(&queues)
            .enabled_extension_names(&names)
            .push_next(&mut f2);
        let device = unsafe { instance.create_device(phd, &info, None) }
            .map_err(|e| format!("vkCreateDevice: {e}"))?;
        let exec = ash::khr::pipeline_executable_properties::Device::new(&instance, &device);
        Ok(Vk {
            _entry: entry,
            instance,
            device,
            exec,
            name,
        })
    }

    /// (executable, statistic, value) for `entry` of `src`.
    fn stats(&self, src: &str, entry: &str, bound_loops: bool) -> R<Vec<(String, String, String)>> {
        let module = naga::front::wgsl::parse_str(src).map_err(|e| e.emit_to_string(src))?;
        let info = naga::valid::Validator::new(
            naga::valid::ValidationFlags::all(),
            naga::valid::Capabilities::all(),
        )
        .validate(&module)
        .map_err(|e| e.emit_to_string(src))?;
        let mut opts = naga::back::spv::Options {
            lang_version: (1, 6),
            ..Default::default()
        };
        opts.bounds_check_policies = naga::proc::BoundsCheckPolicies {
            index: naga::proc::BoundsCheckPolicy::Restrict,
            buffer: naga::proc::BoundsCheckPolicy::Unchecked,
            image_load: naga::proc::BoundsCheckPolicy::Unchecked,
            binding_array: naga::proc::BoundsCheckPolicy::Unchecked,
        };
        opts.zero_initialize_workgroup_memory =
            naga::back::spv::ZeroInitializeWorkgroupMemoryMode::Native;
        opts.force_loop_bounding = bound_loops;
        let po = naga::back::spv::PipelineOptions {
            shader_stage: naga::ShaderStage::Compute,
            entry_point: entry.into(),
        };
        let spv = naga::back::spv::write_vec(&module, &info, &opts, Some(&po))
            .map_err(|e| format!("SPIR-V: {e}"))?;

        // One descriptor set layout a group, from the module's bindings.
        let mut groups: Vec<Vec<vk::DescriptorSetLayoutBinding>> = Vec::new();
        for (_, g) in module.global_variables.iter() {
            let Some(b) = &g.binding else { continue };
            let ty = match g.space {
                naga::AddressSpace::Uniform => vk::DescriptorType::UNIFORM_BUFFER,
                naga::AddressSpace::Storage { .. } => vk::DescriptorType::STORAGE_BUFFER,
                s => return Err(format!("binding in address space {s:?}")),
            };
            let gi = b.group as usize;
            if groups.len() <= gi {
                groups.resize(gi + 1, Vec::new());
            }
            groups[gi].push(
                vk::DescriptorSetLayoutBinding::default()
                    .binding(b.binding)
                    .descriptor_type(ty)
                    .descriptor_count(1)
                    .stage_flags(vk::ShaderStageFlags::COMPUTE),
            );
        }
        let d = &self.device;
        unsafe {
            let mut layouts = Vec::new();
            for g in &groups {
                let l = d
                    .create_descriptor_set_layout(
                        &vk::DescriptorSetLayoutCreateInfo::default().bindings(g),
                        None,
                    )
                    .map_err(|e| e.to_string())?;
                layouts.push(l);
            }
            let pl = d
                .create_pipeline_layout(
                    &vk::PipelineLayoutCreateInfo::default().set_layouts(&layouts),
                    None,
                )
                .map_err(|e| e.to_string())?;
            let sm = d
                .create_shader_module(&vk::ShaderModuleCreateInfo::default().code(&spv), None)
                .map_err(|e| e.to_string())?;
            let name = std::ffi::CString::new(entry).map_err(|e| e.to_string())?;
            let stage = vk::PipelineShaderStageCreateInfo::default()
                .stage(vk::ShaderStageFlags::COMPUTE)
                .module(sm)
                .name(&name);
            let ci = vk::ComputePipelineCreateInfo::default()
                .flags(vk::PipelineCreateFlags::CAPTURE_STATISTICS_KHR)
                .stage(stage)
                .layout(pl);
            let made = d.create_compute_pipelines(vk::PipelineCache::null(), &[ci], None);
            let out = match made {
                Ok(p) => {
                    let r = self.read(p[0]);
                    d.destroy_pipeline(p[0], None);
                    r
                }
                Err((_, e)) => Err(format!("vkCreateComputePipelines: {e}")),
            };
            d.destroy_shader_module(sm, None);
            d.destroy_pipeline_layout(pl, None);
            for l in layouts {
                d.destroy_descriptor_set_layout(l, None);
            }
            out
        }
    }

    unsafe fn read(&self, p: vk::Pipeline) -> R<Vec<(String, String, String)>> {
        let mut rows = Vec::new();
        let exes = self
            .exec
            .get_pipeline_executable_properties(&vk::PipelineInfoKHR::default().pipeline(p))
            .map_err(|e| e.to_string())?;
        for (i, x) in exes.iter().enumerate() {
            let exe = format!(
                "{} (subgroup {})",
                x.name_as_c_str()
                    .map(|s| s.to_string_lossy())
                    .unwrap_or_default(),
                x.subgroup_size
            );
            let info = vk::PipelineExecutableInfoKHR::default()
                .pipeline(p)
                .executable_index(i as u32);
            for s in self
                .exec
                .get_pipeline_executable_statistics(&info)
                .map_err(|e| e.to_string())?
            {
                let v = match s.format {
                    vk::PipelineExecutableStatisticFormatKHR::BOOL32 => s.value.b32.to_string(),
                    vk::PipelineExecutableStatisticFormatKHR::INT64 => s.value.i64.to_string(),
                    vk::PipelineExecutableStatisticFormatKHR::UINT64 => s.value.u64.to_string(),
                    vk::PipelineExecutableStatisticFormatKHR::FLOAT64 => s.value.f64.to_string(),
                    f => format!("{f:?}"),
                };
                let n = s
                    .name_as_c_str()
                    .map(|s| s.to_string_lossy().into_owned())
                    .unwrap_or_default();
                rows.push((exe.clone(), n, v));
            }
        }
        Ok(rows)
    }
}

impl Drop for Vk {
    fn drop(&mut self) {
        unsafe {
            self.device.destroy_device(None);
            self.instance.destroy_instance(None);
        }
    }
}
