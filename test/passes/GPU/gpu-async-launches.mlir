// RUN: spec-opt %s --pass-pipeline='builtin.module(func.func(spec-gpu-async-launches))' -split-input-file | FileCheck %s

// Launches are chained on one token; the host synchronizes before it reads
// a buffer a pending kernel wrote, not before it touches others.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%a: memref<4xf32>) kernel { gpu.return }
  }
  // CHECK-LABEL: func.func @chain
  // CHECK: %[[T0:.*]] = gpu.wait async
  // CHECK-NEXT: %[[T1:.*]] = gpu.launch_func async [%[[T0]]] @kernels::@k
  // CHECK-NEXT: %[[T2:.*]] = gpu.launch_func async [%[[T1]]] @kernels::@k
  // An allocation and a store into a fresh buffer: no synchronization.
  // CHECK-NEXT: memref.alloc
  // CHECK-NEXT: memref.store
  // A load of what a kernel wrote: synchronize first.
  // CHECK-NEXT: gpu.wait [%[[T2]]]
  // CHECK-NEXT: memref.load %[[A:.*]][
  // CHECK-NEXT: %[[T3:.*]] = gpu.wait async
  // CHECK-NEXT: %[[T4:.*]] = gpu.launch_func async [%[[T3]]] @kernels::@k
  // The return synchronizes what is still pending.
  // CHECK-NEXT: gpu.wait [%[[T4]]]
  // CHECK-NEXT: return
  func.func @chain(%a: memref<4xf32>, %b: memref<4xf32>) -> f32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %f = arith.constant 1.0 : f32
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<4xf32>)
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%a : memref<4xf32>)
    %fresh = memref.alloc() : memref<4xf32>
    memref.store %f, %fresh[%c0] : memref<4xf32>
    %v = memref.load %a[%c0] : memref<4xf32>
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%fresh : memref<4xf32>)
    return %v : f32
  }
}

// -----

// Views of a kernel's buffer count as the buffer; loops and calls
// synchronize first.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%a: memref<4xf32>) kernel { gpu.return }
  }
  func.func private @callee()
  // CHECK-LABEL: func.func @views
  // CHECK: gpu.launch_func async
  // CHECK-NEXT: memref.subview
  // CHECK-NEXT: gpu.wait
  // CHECK-NEXT: memref.load
  // CHECK: gpu.launch_func async
  // CHECK-NEXT: gpu.wait
  // CHECK-NEXT: call @callee
  // CHECK: gpu.launch_func async
  // CHECK-NEXT: gpu.wait
  // CHECK-NEXT: scf.for
  func.func @views(%n: index) {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %buf = memref.alloc() : memref<4xf32>
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%buf : memref<4xf32>)
    %view = memref.subview %buf[1] [2] [1] : memref<4xf32> to memref<2xf32, strided<[1], offset: 1>>
    %v = memref.load %view[%c0] : memref<2xf32, strided<[1], offset: 1>>
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%buf : memref<4xf32>)
    func.call @callee() : () -> ()
    gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%buf : memref<4xf32>)
    scf.for %i = %c0 to %n step %c1 {
    }
    memref.dealloc %buf : memref<4xf32>
    return
  }
}

// -----

// Inside a loop, an iteration argument may be a buffer allocated outside:
// a kernel writing that buffer makes a host read through the argument wait,
// and the other way round.
module attributes {gpu.container_module} {
  gpu.module @kernels {
    gpu.func @k(%a: memref<4xf32>) kernel { gpu.return }
  }
  // CHECK-LABEL: func.func @aliases
  // CHECK: scf.for {{.*}} iter_args(%[[X:.*]] = %[[OUTER:.*]]) -> (memref<4xf32>)
  // CHECK-NEXT: gpu.wait async
  // CHECK-NEXT: gpu.launch_func async {{.*}} args(%[[OUTER]] : memref<4xf32>)
  // CHECK-NEXT: gpu.wait
  // CHECK-NEXT: memref.load %[[X]]
  // CHECK-NEXT: gpu.wait async
  // CHECK-NEXT: gpu.launch_func async {{.*}} args(%[[X]] : memref<4xf32>)
  // CHECK-NEXT: gpu.wait
  // CHECK-NEXT: memref.load %[[OUTER]]
  func.func @aliases(%n: index) -> f32 {
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %f = arith.constant 0.0 : f32
    %outer = memref.alloc() : memref<4xf32>
    %r = scf.for %i = %c0 to %n step %c1 iter_args(%x = %outer) -> (memref<4xf32>) {
      gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%outer : memref<4xf32>)
      %v = memref.load %x[%c0] : memref<4xf32>
      gpu.launch_func @kernels::@k blocks in (%c1, %c1, %c1) threads in (%c1, %c1, %c1) args(%x : memref<4xf32>)
      %w = memref.load %outer[%c0] : memref<4xf32>
      scf.yield %x : memref<4xf32>
    }
    return %f : f32
  }
}
