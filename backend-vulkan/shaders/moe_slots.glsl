// The local expert of route slot `slot` (token slot / k; route [n_tok, 2k] of (expert id,
// weight) pairs), or -1 where another rank holds it. The including shader's push constants name
// the route `route`, this rank's first expert `first` and its count `n_local`.
int slot_expert(uint slot) {
    const int le = int(p.route.v[2u * slot]) - int(p.first);
    return le >= 0 && le < int(p.n_local) ? le : -1;
}
