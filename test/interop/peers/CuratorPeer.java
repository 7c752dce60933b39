import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.framework.recipes.leader.LeaderSelector;
import org.apache.curator.framework.recipes.leader.LeaderSelectorListenerAdapter;
import org.apache.curator.framework.recipes.leader.Participant;
import org.apache.curator.framework.recipes.locks.InterProcessMutex;
import org.apache.curator.framework.recipes.locks.InterProcessReadWriteLock;
import org.apache.curator.retry.RetryNTimes;
import org.apache.zookeeper.KeeperException;

/**
 * A lock peer on Apache Curator's own recipes, driven line by line for baton's interop tests
 * (test/harness/interop-peers.ts).
 *
 * Usage: java -cp CLASSPATH CuratorPeer CONNECT_STRING PATH RECIPE ID
 * RECIPE: mutex | read | write | selector | latch | observe
 *
 * stdin, one command a line: acquire | release | leader | exit (EOF: exit).
 * stdout, one event a line, flushed: ready | granted | released | leader ID | error MESSAGE
 * (and, for information, state CONNECTION_STATE on every change of the connection's state).
 *
 * `release` gives up whatever the peer has: the lock if held, the pending acquire if waiting (its
 * node is deleted); `released` is printed once the peer's node is gone (at once when idle).
 * Every node the peer creates holds ID as its data (the client's default data, LeaderSelector's and
 * LeaderLatch's participant id), so `leader` answers with an ID for every recipe.
 */
public final class CuratorPeer {
  private static final int SESSION_TIMEOUT_MS = 4_000;
  private static final int CONNECTION_TIMEOUT_MS = 4_000;
  private static final long BOUND_MS = 10_000;

  private enum State { IDLE, ACQUIRING, HELD }

  private final CuratorFramework client;
  private final String path;
  private final String recipe;
  private final String id;
  /** Acquires and releases the thread-bound mutexes on one thread of their own, off the stdin reader. */
  private final ExecutorService worker = Executors.newSingleThreadExecutor(daemon("curator-peer-worker"));

  private State state = State.IDLE;
  private boolean releaseRequested;
  /** The worker thread while it waits in a mutex's acquire(), for `release` to interrupt. */
  private Thread acquiringThread;
  private InterProcessMutex mutex;
  private LeaderSelector selector;
  private ExecutorService selectorThread;
  private CountDownLatch leadershipHeld;
  private LeaderLatch latch;

  private CuratorPeer(CuratorFramework client, String path, String recipe, String id) {
    this.client = client;
    this.path = path;
    this.recipe = recipe;
    this.id = id;
  }

  public static void main(String[] args) throws Exception {
    if (args.length != 4) {
      System.err.println("usage: CuratorPeer CONNECT_STRING PATH mutex|read|write|selector|latch|observe ID");
      System.exit(2);
    }
    String recipe = args[2];
    if (!List.of("mutex", "read", "write", "selector", "latch", "observe").contains(recipe)) {
      emit("error unknown recipe " + recipe);
      System.exit(2);
    }
    CuratorFramework client = CuratorFrameworkFactory.builder()
        .connectString(args[0])
        .sessionTimeoutMs(SESSION_TIMEOUT_MS)
        .connectionTimeoutMs(CONNECTION_TIMEOUT_MS)
        .retryPolicy(new RetryNTimes(3, 200))
        .defaultData(args[3].getBytes(StandardCharsets.UTF_8))
        .build();
    client.getConnectionStateListenable().addListener((c, newState) -> emit("state " + newState));
    client.start();
    if (!client.blockUntilConnected((int) BOUND_MS, TimeUnit.MILLISECONDS)) {
      emit("error not connected to " + args[0] + " after " + BOUND_MS + " ms");
      client.close();
      System.exit(1);
    }
    CuratorPeer peer = new CuratorPeer(client, args[1], recipe, args[3]);
    emit("ready");
    peer.readCommands();
  }

  private void readCommands() {
    try (BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8))) {
      String line;
      while ((line = in.readLine()) != null) {
        switch (line.trim()) {
          case "acquire" -> acquire();
          case "release" -> release();
          case "leader" -> leader();
          case "exit" -> {
            exit();
            return;
          }
          case "" -> { }
          default -> emit("error unknown command " + line.trim());
        }
      }
    } catch (Exception e) {
      emit("error stdin: " + describe(e));
    }
    exit();
  }

  // ---- acquire ----

  private synchronized void acquire() {
    if (state != State.IDLE) {
      emit("error acquire while " + state.name().toLowerCase());
      return;
    }
    if (recipe.equals("observe")) {
      emit("error an observer does not acquire");
      return;
    }
    state = State.ACQUIRING;
    releaseRequested = false;
    switch (recipe) {
      case "mutex", "read", "write" -> {
        InterProcessReadWriteLock rw = recipe.equals("mutex") ? null : new InterProcessReadWriteLock(client, path);
        mutex = rw == null ? new InterProcessMutex(client, path) : recipe.equals("read") ? rw.readLock() : rw.writeLock();
        worker.execute(this::acquireMutex);
      }
      case "selector" -> startSelector();
      case "latch" -> startLatch();
      default -> throw new IllegalStateException(recipe);
    }
  }

  private void acquireMutex() {
    synchronized (this) {
      // Released before this task even started.
      if (releaseRequested) {
        onReleased();
        return;
      }
      acquiringThread = Thread.currentThread();
    }
    try {
      mutex.acquire();
      synchronized (this) {
        acquiringThread = null;
      }
      onGranted();
    } catch (InterruptedException e) {
      // Cancelled by `release`: Curator deleted the node on its way out.
      synchronized (this) {
        acquiringThread = null;
      }
      onReleased();
    } catch (Exception e) {
      synchronized (this) {
        acquiringThread = null;
      }
      onFailed("acquire", e);
    }
  }

  private void startSelector() {
    leadershipHeld = new CountDownLatch(1);
    CountDownLatch held = leadershipHeld;
    selectorThread = Executors.newSingleThreadExecutor(daemon("curator-peer-selector"));
    selector = new LeaderSelector(client, path, selectorThread, new LeaderSelectorListenerAdapter() {
      @Override
      public void takeLeadership(CuratorFramework c) throws Exception {
        onGranted();
        // Holds leadership until `release`; an interrupt (session trouble, close) gives it up too.
        held.await();
      }
    });
    selector.setId(id);
    selector.start();
  }

  private void startLatch() {
    latch = new LeaderLatch(client, path, id);
    latch.addListener(new LeaderLatchListener() {
      @Override
      public void isLeader() {
        onGranted();
      }

      @Override
      public void notLeader() {
        emit("state NOT_LEADER");
      }
    });
    try {
      latch.start();
    } catch (Exception e) {
      onFailed("latch start", e);
    }
  }

  private synchronized void onGranted() {
    if (state != State.ACQUIRING) return;
    state = State.HELD;
    if (!releaseRequested) {
      emit("granted");
      return;
    }
    // A release asked for while the grant was on its way: the next event is `released` all the same.
    // The selector's and the latch's releases are under way already; a mutex is given up here.
    if (mutex != null && recipe.matches("mutex|read|write")) release();
  }

  private synchronized void onReleased() {
    state = State.IDLE;
    releaseRequested = false;
    emit("released");
  }

  private synchronized void onFailed(String what, Exception e) {
    state = State.IDLE;
    releaseRequested = false;
    emit("error " + what + ": " + describe(e));
  }

  // ---- release ----

  private synchronized void release() {
    if (state == State.IDLE) {
      emit("released");
      return;
    }
    releaseRequested = true;
    switch (recipe) {
      case "mutex", "read", "write" -> {
        if (state == State.ACQUIRING) {
          // The worker waits in acquire(): interrupted, it reports `released` (and so does a task
          // that has not started yet, seeing releaseRequested).
          if (acquiringThread != null) acquiringThread.interrupt();
        } else {
          // InterProcessMutex belongs to the thread that acquired it.
          worker.execute(() -> {
            try {
              mutex.release();
              onReleased();
            } catch (Exception e) {
              onFailed("release", e);
            }
          });
        }
      }
      case "selector" -> {
        LeaderSelector s = selector;
        ExecutorService t = selectorThread;
        CountDownLatch held = leadershipHeld;
        boolean leader = state == State.HELD;
        selector = null;
        selectorThread = null;
        // Off this thread: close() and the wait must not hold the peer's monitor.
        new Thread(() -> releaseSelector(s, t, held, leader), "curator-peer-release").start();
      }
      case "latch" -> {
        LeaderLatch l = latch;
        latch = null;
        new Thread(() -> releaseLatch(l), "curator-peer-release").start();
      }
      default -> throw new IllegalStateException(recipe);
    }
  }

  /**
   * A leader returns from takeLeadership and LeaderSelector deletes its node on the same thread; a
   * queued one is interrupted by close(), and Curator deletes its node on the way out. A task queued
   * behind either on that single thread then runs only once the node is gone.
   */
  private void releaseSelector(LeaderSelector s, ExecutorService t, CountDownLatch held, boolean leader) {
    try {
      if (leader) {
        held.countDown();
        t.submit(() -> { }).get(BOUND_MS, TimeUnit.MILLISECONDS);
        s.close();
      } else {
        held.countDown();
        s.close();
        t.submit(() -> { }).get(BOUND_MS, TimeUnit.MILLISECONDS);
      }
      t.shutdown();
      onReleased();
    } catch (Exception e) {
      onFailed("release", e);
    }
  }

  /**
   * LeaderLatch deletes its node in the background on close(): wait until it is gone. A latch closed
   * before its node's create came back deletes that node once it does; then no node may hold our id.
   */
  private void releaseLatch(LeaderLatch l) {
    try {
      String ours = l.getOurPath();
      l.close();
      long deadline = System.currentTimeMillis() + BOUND_MS;
      while (ours != null ? client.checkExists().forPath(ours) != null : holdsOurId()) {
        if (System.currentTimeMillis() > deadline) throw new IllegalStateException("our latch node still there after " + BOUND_MS + " ms");
        Thread.sleep(10);
      }
      onReleased();
    } catch (Exception e) {
      onFailed("release", e);
    }
  }

  private boolean holdsOurId() throws Exception {
    List<String> children;
    try {
      children = client.getChildren().forPath(path);
    } catch (KeeperException.NoNodeException e) {
      return false;
    }
    for (String child : children) {
      try {
        if (id.equals(new String(client.getData().forPath(path + "/" + child), StandardCharsets.UTF_8))) return true;
      } catch (KeeperException.NoNodeException e) {
        // gone
      }
    }
    return false;
  }

  // ---- leader ----

  private void leader() {
    try {
      Participant leader = switch (recipe) {
        case "latch" -> latch != null ? latch.getLeader() : new LeaderLatch(client, path).getLeader();
        // A selector made only to ask: Curator's own reading of the directory, not started.
        case "selector" -> selector != null ? selector.getLeader() : new LeaderSelector(client, path, new LeaderSelectorListenerAdapter() {
          @Override
          public void takeLeadership(CuratorFramework unused) {}
        }).getLeader();
        default -> readingOf(path);
      };
      emit("leader " + (leader != null && leader.isLeader() ? leader.getId() : ""));
    } catch (Exception e) {
      emit("error leader: " + describe(e));
    }
  }

  /**
   * The reading LeaderLatch and LeaderSelector make of their own directory, for any directory: the
   * child with the lowest sequence number (the digits its name ends in) leads, and its data is its id.
   */
  private Participant readingOf(String dir) throws Exception {
    List<String> children;
    try {
      children = new ArrayList<>(client.getChildren().forPath(dir));
    } catch (KeeperException.NoNodeException e) {
      return null;
    }
    children.removeIf(name -> sequenceOf(name) < 0);
    children.sort(Comparator.comparingLong(CuratorPeer::sequenceOf));
    for (String child : children) {
      try {
        byte[] data = client.getData().forPath(dir + "/" + child);
        return new Participant(new String(data == null ? new byte[0] : data, StandardCharsets.UTF_8), true);
      } catch (KeeperException.NoNodeException e) {
        // gone meanwhile: the next one leads
      }
    }
    return null;
  }

  private static long sequenceOf(String name) {
    int i = name.length();
    while (i > 0 && Character.isDigit(name.charAt(i - 1))) i -= 1;
    if (name.length() - i != 10) return -1;
    return Long.parseLong(name.substring(i));
  }

  // ---- exit ----

  private void exit() {
    boolean waitRelease;
    synchronized (this) {
      waitRelease = state != State.IDLE;
    }
    if (waitRelease) {
      release();
      long deadline = System.currentTimeMillis() + BOUND_MS;
      while (System.currentTimeMillis() < deadline) {
        synchronized (this) {
          if (state == State.IDLE) break;
        }
        try {
          Thread.sleep(10);
        } catch (InterruptedException e) {
          break;
        }
      }
    }
    client.close();
    System.out.flush();
    System.exit(0);
  }

  // ---- output ----

  private static synchronized void emit(String line) {
    System.out.println(line.replace('\n', ' '));
    System.out.flush();
  }

  private static String describe(Throwable e) {
    String message = e.getMessage();
    return e.getClass().getSimpleName() + (message == null ? "" : " " + message);
  }

  private static java.util.concurrent.ThreadFactory daemon(String name) {
    return runnable -> {
      Thread thread = new Thread(runnable, name);
      thread.setDaemon(true);
      return thread;
    };
  }
}
