// The one call we use of fs-ext (a native addon): flock(2), which Node core lacks.
declare module 'fs-ext' {
  export function flockSync(fd: number, flags: 'sh' | 'ex' | 'shnb' | 'exnb' | 'un'): void;
}
