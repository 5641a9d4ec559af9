// LatchPeer drives one Apache Curator LeaderLatch for the interop tests of
// package zookeeper. Usage: java LatchPeer CONNECT LATCHPATH ID
//
// It reads commands on stdin, one a line, and answers on stdout:
//   start   start a new LeaderLatch         -> STARTED, then LEADER when elected
//   leader  ask the latch for the leader     -> LEADERID <id>
//   close   close the latch (releasing it)   -> CLOSED
//   quit    close the client and exit        -> BYE
import java.io.BufferedReader;
import java.io.InputStreamReader;

import org.apache.curator.framework.CuratorFramework;
import org.apache.curator.framework.CuratorFrameworkFactory;
import org.apache.curator.framework.recipes.leader.LeaderLatch;
import org.apache.curator.framework.recipes.leader.LeaderLatchListener;
import org.apache.curator.retry.RetryNTimes;

public class LatchPeer {
    public static void main(String[] args) throws Exception {
        CuratorFramework client = CuratorFrameworkFactory.builder()
                .connectString(args[0])
                .sessionTimeoutMs(4000)
                .connectionTimeoutMs(4000)
                .retryPolicy(new RetryNTimes(3, 100))
                .build();
        client.start();
        client.blockUntilConnected();
        out("READY");
        LeaderLatch latch = null;
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        for (String line; (line = in.readLine()) != null; ) {
            switch (line.trim()) {
                case "start":
                    latch = new LeaderLatch(client, args[1], args[2]);
                    latch.addListener(new LeaderLatchListener() {
                        public void isLeader() { out("LEADER"); }
                        public void notLeader() { out("NOTLEADER"); }
                    });
                    latch.start();
                    out("STARTED");
                    break;
                case "leader":
                    out("LEADERID " + latch.getLeader().getId());
                    break;
                case "close":
                    latch.close();
                    out("CLOSED");
                    break;
                case "quit":
                    client.close();
                    out("BYE");
                    return;
                default:
                    out("ERROR unknown command " + line);
            }
        }
    }

    static synchronized void out(String s) {
        System.out.println(s);
        System.out.flush();
    }
}
