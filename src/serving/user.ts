// Who a request is from, as the apiserver names the user it authenticated: the front proxy's headers (the
// tenant API) or the client certificate it presents to a kubelet (the virtual nodes' kubelet API).
export interface User {
  readonly name: string;
  readonly groups: readonly string[];
  readonly extra: Readonly<Record<string, readonly string[]>>;
}
