// What the JVM believes it has, printed as one JSON line for Limit Lab's
// runtime-cpus lab (internal/workload/runtimes.go reads and checks it).
// Every figure is the JVM's own, read as it starts: the CPUs it counts,
// the parallelism and GC threads it sizes from them, and the heap it
// sizes from the memory it sees.
import com.sun.management.HotSpotDiagnosticMXBean;
import java.lang.management.ManagementFactory;
import java.util.concurrent.ForkJoinPool;

public class Probe {
    public static void main(String[] args) {
        HotSpotDiagnosticMXBean hs = ManagementFactory.getPlatformMXBean(HotSpotDiagnosticMXBean.class);
        String gc = "other";
        if (hs.getVMOption("UseG1GC").getValue().equals("true")) gc = "G1";
        else if (hs.getVMOption("UseSerialGC").getValue().equals("true")) gc = "Serial";
        else if (hs.getVMOption("UseParallelGC").getValue().equals("true")) gc = "Parallel";
        System.out.println("{\"runtime\":\"java\",\"version\":\"" + Runtime.version() + "\",\"figures\":["
            + figure("available_processors", Runtime.getRuntime().availableProcessors()) + ","
            + figure("fork_join_parallelism", ForkJoinPool.commonPool().getParallelism()) + ","
            + figure("gc_threads", Long.parseLong(hs.getVMOption("ParallelGCThreads").getValue())) + ","
            + figure("max_heap_bytes", Long.parseLong(hs.getVMOption("MaxHeapSize").getValue()))
            + "],\"gc\":\"" + gc + "\"}");
    }

    static String figure(String name, long value) {
        return "{\"name\":\"" + name + "\",\"value\":" + value + "}";
    }
}
