package io.retentionguard.test;

/** Placeholder: replaced by the real consumer. */
public final class Consumer {
  public static void main(String[] args) {
    System.out.println("{\"msg\":\"started\"}");
  }
}
