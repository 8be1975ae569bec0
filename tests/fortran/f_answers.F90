! SPDX-License-Identifier: BSD-3-Clause
! What every Fortran completion call answers, printed word for word, in
! one binding style: mpif.h (STYLE_MPIF), `use mpi` (the default) or
! `use mpi_f08` (STYLE_F08), so that a run under the shim can be compared
! with one on stock MPI in the same build (scripts/test/programs.sh,
! answers_case), quirks included: MPICH 4.0.2's mpi_f08 MPI_Waitany,
! MPI_Testany, MPI_Waitsome and MPI_Testsome give indices from 0, and
! programs that know it (a Fortran FFT library's configure test) add the
! 1 themselves. The C twin is tests/mpi/answers.c: the same request
! kinds (N null, P finished receive, G finished generalized request, C
! finished MPI_IALLTOALL of 64 KiB blocks, I inactive persistent
! receive, U receive nothing matches) and statuses filled with a marker
! beforehand, a word left unwritten shown as '-'. Of a collective's
! status MPICH defines MPI_ERROR alone (tests/mpi/answers.c). Only what
! MPI defines is compared: Open MPI 4.1's Fortran bindings copy C
! statuses that nothing wrote (garbage from its stack and heap) into the
! MPI_ERROR word of a single completion's status, into the statuses past
! the outcount of MPI_WAITSOME and MPI_TESTSOME and into those of an
! unfinished test, so these are shown as '?'; indices are shown up to
! the outcount. The index base of each call is printed too ("base:"),
! found as a program finds it: a finished request at position 1.
program f_answers
#if defined(STYLE_F08)
    use mpi_f08
    implicit none
#define REQT type(MPI_Request)
#define RV(x) x%MPI_VAL
#define ST1 type(MPI_Status) :: st1
#define STS type(MPI_Status) :: sts(maxr)
#define STI(i) sts(i)
#elif defined(STYLE_MPIF)
    implicit none
    include 'mpif.h'
#define REQT integer
#define RV(x) x
#define ST1 integer :: st1(MPI_STATUS_SIZE)
#define STS integer :: sts(MPI_STATUS_SIZE, maxr)
#define STI(i) sts(:, i)
#else
    use mpi
    implicit none
#define REQT integer
#define RV(x) x
#define ST1 integer :: st1(MPI_STATUS_SIZE)
#define STS integer :: sts(MPI_STATUS_SIZE, maxr)
#define STI(i) sts(:, i)
#endif
    integer, parameter :: maxr = 6, block = 16384
    integer, parameter :: mark = 1515870810   ! 0x5A5A5A5A
    integer :: rank, nproc, ierr, i, nw, errpos, liblen
    integer, allocatable :: sb(:, :), rb(:, :), words(:)
    integer :: pin(3, maxr), pout(3, maxr), idle(maxr)
    REQT :: r(maxr), orig(maxr), side(maxr)
    ST1
    STS
    logical :: mpich
    character(len=MPI_MAX_LIBRARY_VERSION_STRING) :: lib
    character(len=1000) :: line
    character(len=*), parameter :: &
        singles(6) = [character(len=6) :: 'N', 'P', 'G', 'C', 'I', 'U'], &
        walls(5) = [character(len=6) :: '', 'NN', 'IN', 'PGCN', 'NCPI'], &
        talls(6) = [character(len=6) :: '', 'NN', 'IN', 'PGC', 'PU', 'CU'], &
        wanys(7) = [character(len=6) :: '', 'NN', 'IN', 'NC', 'IP', 'NG', &
                    'UC'], &
        tanys(8) = [character(len=6) :: '', 'NN', 'IN', 'UC', 'NG', 'UN', &
                    'IU', 'UP'], &
        wsomes(6) = [character(len=6) :: '', 'NN', 'IN', 'CPNG', 'UC', &
                     'NCIC'], &
        tsomes(7) = [character(len=6) :: '', 'NN', 'IN', 'UC', 'U', 'CG', &
                     'UNP']
    integer :: ig, wbase(4)

    call MPI_INIT(ierr)
    call MPI_COMM_RANK(MPI_COMM_WORLD, rank, ierr)
    call MPI_COMM_SIZE(MPI_COMM_WORLD, nproc, ierr)
    call MPI_GET_LIBRARY_VERSION(lib, liblen, ierr)
    mpich = index(lib, 'MPICH') > 0
    allocate(sb(block * nproc, maxr), rb(block * nproc, maxr))
    nw = size_words()
    allocate(words(nw))
    errpos = error_word()
    call bases()

    do ig = 0, 1
        do i = 1, 6
            call one(trim(singles(i)), ig == 1)
        end do
        do i = 1, 5
            call do_all(trim(walls(i)), .true., ig == 1)
        end do
        do i = 1, 6
            call do_all(trim(talls(i)), .false., ig == 1)
        end do
        do i = 1, 7
            call do_any(trim(wanys(i)), .true., ig == 1)
        end do
        do i = 1, 8
            call do_any(trim(tanys(i)), .false., ig == 1)
        end do
        do i = 1, 6
            call do_some(trim(wsomes(i)), .true., ig == 1)
        end do
        do i = 1, 7
            call do_some(trim(tsomes(i)), .false., ig == 1)
        end do
    end do
    if (rank == 0) print '(a)', 'result: ok'
    call MPI_FINALIZE(ierr)

contains

    ! Integers in one status.
    integer function size_words()
        size_words = size(transfer(st1, [0]))
    end function

    ! Which of them is MPI_ERROR (1-based).
    integer function error_word()
        integer :: w(nw), k
        w = 0
        st1 = transfer(w, st1)
#if defined(STYLE_F08)
        st1%MPI_ERROR = 77
#else
        st1(MPI_ERROR) = 77
#endif
        w = transfer(st1, w)
        error_word = 0
        do k = 1, nw
            if (w(k) == 77) error_word = k
        end do
    end function

    ! The index each of MPI_WAITANY, MPI_TESTANY, MPI_WAITSOME and
    ! MPI_TESTSOME gives a finished request at position 1: 1 as MPI says,
    ! 0 with MPICH 4.0.2's mpi_f08.
    subroutine bases()
        integer :: k, idx(1), outc
        logical :: fl
        do k = 1, 4
            call fa_greq(RV(r(1)))
            select case (k)
            case (1)
                call MPI_WAITANY(1, r, idx(1), MPI_STATUS_IGNORE, ierr)
            case (2)
                call MPI_TESTANY(1, r, idx(1), fl, MPI_STATUS_IGNORE, ierr)
            case (3)
                call MPI_WAITSOME(1, r, outc, idx, MPI_STATUSES_IGNORE, ierr)
            case (4)
                call MPI_TESTSOME(1, r, outc, idx, MPI_STATUSES_IGNORE, ierr)
            end select
            wbase(k) = idx(1)
        end do
        if (rank == 0) print '(a,4(1x,i0))', &
            'ans: base: waitany testany waitsome testsome', wbase
    end subroutine

    subroutine marked()
        integer :: k
        words = mark
        st1 = transfer(words, st1)
        do k = 1, maxr
            STI(k) = transfer(words, st1)
        end do
    end subroutine

    ! Wait until MPI says the request finished, without completing it.
    ! (With a status: Open MPI 4.1's MPI_REQUEST_GET_STATUS says .FALSE.
    ! whenever the status is MPI_STATUS_IGNORE.)
    subroutine finish(q)
        REQT, intent(in) :: q
        logical :: fl
        ST1
        fl = .false.
        do while (.not. fl)
            call MPI_REQUEST_GET_STATUS(q, fl, st1, ierr)
        end do
    end subroutine

    subroutine make(kinds)
        character(len=*), intent(in) :: kinds
        integer :: k, j
        do k = 1, len(kinds)
            side(k) = MPI_REQUEST_NULL
            select case (kinds(k:k))
            case ('N')
                r(k) = MPI_REQUEST_NULL
            case ('P')
                pout(:, k) = [11 * k, 12, 13]
                call MPI_IRECV(pin(:, k), 3, MPI_INTEGER, rank, 7 + k, &
                               MPI_COMM_WORLD, r(k), ierr)
                call MPI_ISEND(pout(:, k), 3, MPI_INTEGER, rank, 7 + k, &
                               MPI_COMM_WORLD, side(k), ierr)
                call finish(r(k))
            case ('G')
                call fa_greq(RV(r(k)))
            case ('C')
                do j = 1, block * nproc
                    sb(j, k) = rank * 1000003 + j
                end do
                call MPI_IALLTOALL(sb(:, k), block, MPI_INTEGER, rb(:, k), &
                                   block, MPI_INTEGER, MPI_COMM_WORLD, &
                                   r(k), ierr)
                call finish(r(k))
            case ('I')
                call MPI_RECV_INIT(pin(:, k), 3, MPI_INTEGER, rank, 50 + k, &
                                   MPI_COMM_WORLD, r(k), ierr)
            case ('U')
                call MPI_IRECV(idle(k), 1, MPI_INTEGER, rank, 99, &
                               MPI_COMM_WORLD, r(k), ierr)
            end select
            orig(k) = r(k)
        end do
    end subroutine

    ! Everything a case left, completed or freed, its data checked.
    subroutine drop(kinds)
        character(len=*), intent(in) :: kinds
        integer :: k, p, j
        do k = 1, len(kinds)
            if (kinds(k:k) == 'U' .and. RV(r(k)) /= RV(MPI_REQUEST_NULL)) &
                call MPI_CANCEL(r(k), ierr)
            if (kinds(k:k) == 'I') then
                call MPI_REQUEST_FREE(r(k), ierr)
            else
                call MPI_WAIT(r(k), MPI_STATUS_IGNORE, ierr)
            end if
            call MPI_WAIT(side(k), MPI_STATUS_IGNORE, ierr)
            if (kinds(k:k) == 'C') then
                do p = 0, nproc - 1
                    do j = 1, block
                        if (rb(p * block + j, k) /= &
                            p * 1000003 + rank * block + j) then
                            print '(a,i0)', 'f_answers: alltoall data wrong ' &
                                // 'on rank ', rank
                            call MPI_ABORT(MPI_COMM_WORLD, 3, ierr)
                        end if
                    end do
                end do
            end if
            if (kinds(k:k) == 'P' .and. any_ne(pin(:, k), [11 * k, 12, 13])) &
                then
                print '(a,i0)', 'f_answers: receive wrong on rank ', rank
                call MPI_ABORT(MPI_COMM_WORLD, 3, ierr)
            end if
        end do
        call MPI_BARRIER(MPI_COMM_WORLD, ierr)
    end subroutine

    logical function any_ne(a, b)
        integer, intent(in) :: a(:), b(:)
        any_ne = any(a /= b)
    end function

    subroutine put(s)
        character(len=*), intent(in) :: s
        line = trim(line) // s
    end subroutine

    subroutine puti(key, v)
        character(len=*), intent(in) :: key
        integer, intent(in) :: v
        character(len=16) :: b
        write (b, '(i0)') v
        line = trim(line) // ' ' // key // '=' // trim(b)
    end subroutine

    subroutine putn(v)
        integer, intent(in) :: v
        character(len=16) :: b
        write (b, '(i0)') v
        line = trim(line) // trim(b)
    end subroutine

    subroutine putl(key, v)
        character(len=*), intent(in) :: key
        logical, intent(in) :: v
        line = trim(line) // ' ' // key // '=' // merge('T', 'F', v)
    end subroutine

    subroutine begin(call, kinds, ignore)
        character(len=*), intent(in) :: call, kinds
        logical, intent(in) :: ignore
        line = 'ans: ' // call // '(' // kinds // ')'
        if (ignore) line = trim(line) // ' ignore'
    end subroutine

    subroutine finish_line(kinds)
        character(len=*), intent(in) :: kinds
        integer :: k
        call put(' reqs=')
        do k = 1, len(kinds)
            if (RV(r(k)) == RV(MPI_REQUEST_NULL)) then
                call put('n')
            else if (RV(r(k)) == RV(orig(k))) then
                call put('=')
            else
                call put('?')
            end if
        end do
        if (rank == 0) print '(a)', trim(line)
    end subroutine

    ! A status's words; of a collective's on MPICH only MPI_ERROR; none
    ! where MPI leaves it undefined (how = 'u'), MPI_ERROR not of a
    ! single completion (how = 's').
    subroutine put_status(w, kind, how)
        integer, intent(in) :: w(:)
        character(len=1), intent(in) :: kind, how
        integer :: k
        character(len=16) :: b
        call put(' st=')
        do k = 1, nw
            if (k > 1) call put(',')
            if (how == 'u' .or. (how == 's' .and. k == errpos)) then
                call put('?')
            else if (mpich .and. (kind == 'C') .and. k /= errpos) then
                call put('x')
            else if (w(k) == mark) then
                call put('-')
            else
                write (b, '(i0)') w(k)
                call put(trim(b))
            end if
        end do
    end subroutine

    character(len=1) function kind_at(kinds, k)
        character(len=*), intent(in) :: kinds
        integer, intent(in) :: k
        kind_at = 'N'
        if (k >= 1 .and. k <= len(kinds)) kind_at = kinds(k:k)
    end function

    subroutine one(kinds, ignore)
        character(len=*), intent(in) :: kinds
        logical, intent(in) :: ignore
        logical :: fl

        if (kinds /= 'U') then
            call make(kinds)
            call marked()
            if (ignore) then
                call MPI_WAIT(r(1), MPI_STATUS_IGNORE, ierr)
            else
                call MPI_WAIT(r(1), st1, ierr)
            end if
            call begin('wait', kinds, ignore)
            call puti('rc', ierr)
            if (.not. ignore) &
                call put_status(transfer(st1, words), kinds(1:1), 's')
            call finish_line(kinds)
            call drop(kinds)
        end if

        call make(kinds)
        call marked()
        fl = .false.
        if (ignore) then
            call MPI_TEST(r(1), fl, MPI_STATUS_IGNORE, ierr)
        else
            call MPI_TEST(r(1), fl, st1, ierr)
        end if
        call begin('test', kinds, ignore)
        call puti('rc', ierr)
        call putl('flag', fl)
        if (.not. ignore) call put_status(transfer(st1, words), kinds(1:1), &
                                          merge('s', 'u', fl))
        call finish_line(kinds)
        call drop(kinds)

        call make(kinds)
        call marked()
        fl = .false.
        if (ignore) then
            call MPI_REQUEST_GET_STATUS(r(1), fl, MPI_STATUS_IGNORE, ierr)
        else
            call MPI_REQUEST_GET_STATUS(r(1), fl, st1, ierr)
        end if
        call begin('get_status', kinds, ignore)
        call puti('rc', ierr)
        call putl('flag', fl)
        if (.not. ignore) call put_status(transfer(st1, words), kinds(1:1), &
                                          merge('s', 'u', fl))
        call finish_line(kinds)
        call drop(kinds)
    end subroutine

    subroutine do_all(kinds, wait, ignore)
        character(len=*), intent(in) :: kinds
        logical, intent(in) :: wait, ignore
        logical :: fl
        integer :: n, k

        n = len(kinds)
        call make(kinds)
        call marked()
        fl = .false.
        if (wait .and. ignore) then
            call MPI_WAITALL(n, r, MPI_STATUSES_IGNORE, ierr)
        else if (wait) then
            call MPI_WAITALL(n, r, sts, ierr)
        else if (ignore) then
            call MPI_TESTALL(n, r, fl, MPI_STATUSES_IGNORE, ierr)
        else
            call MPI_TESTALL(n, r, fl, sts, ierr)
        end if
        call begin(merge('waitall', 'testall', wait), kinds, ignore)
        call puti('rc', ierr)
        if (.not. wait) call putl('flag', fl)
        do k = 1, n
            if (.not. ignore) &
                call put_status(transfer(STI(k), words), kinds(k:k), &
                                merge('a', 'u', wait .or. fl))
        end do
        call finish_line(kinds)
        call drop(kinds)
    end subroutine

    subroutine do_any(kinds, wait, ignore)
        character(len=*), intent(in) :: kinds
        logical, intent(in) :: wait, ignore
        logical :: fl
        integer :: n, idx

        n = len(kinds)
        call make(kinds)
        call marked()
        fl = .false.
        idx = -7
        if (wait .and. ignore) then
            call MPI_WAITANY(n, r, idx, MPI_STATUS_IGNORE, ierr)
        else if (wait) then
            call MPI_WAITANY(n, r, idx, st1, ierr)
        else if (ignore) then
            call MPI_TESTANY(n, r, idx, fl, MPI_STATUS_IGNORE, ierr)
        else
            call MPI_TESTANY(n, r, idx, fl, st1, ierr)
        end if
        call begin(merge('waitany', 'testany', wait), kinds, ignore)
        call puti('rc', ierr)
        call puti('idx', idx)
        if (.not. wait) call putl('flag', fl)
        if (.not. ignore) call put_status(transfer(st1, words), &
            kind_at(kinds, idx + 1 - merge(wbase(1), wbase(2), wait)), &
            merge('s', 'u', wait .or. fl))
        call finish_line(kinds)
        call drop(kinds)
    end subroutine

    subroutine do_some(kinds, wait, ignore)
        character(len=*), intent(in) :: kinds
        logical, intent(in) :: wait, ignore
        integer :: n, outc, idx(maxr), k

        n = len(kinds)
        call make(kinds)
        call marked()
        outc = -7
        idx = -7
        if (wait .and. ignore) then
            call MPI_WAITSOME(n, r, outc, idx, MPI_STATUSES_IGNORE, ierr)
        else if (wait) then
            call MPI_WAITSOME(n, r, outc, idx, sts, ierr)
        else if (ignore) then
            call MPI_TESTSOME(n, r, outc, idx, MPI_STATUSES_IGNORE, ierr)
        else
            call MPI_TESTSOME(n, r, outc, idx, sts, ierr)
        end if
        call begin(merge('waitsome', 'testsome', wait), kinds, ignore)
        call puti('rc', ierr)
        call puti('out', outc)
        call put(' idx=')
        do k = 1, outc
            if (k > 1) call put(',')
            call putn(idx(k))
        end do
        do k = 1, n
            if (.not. ignore) call put_status(transfer(STI(k), words), &
                kind_at(kinds, idx(k) + 1 - merge(wbase(3), wbase(4), wait)), &
                merge('a', 'u', k <= outc))
        end do
        call finish_line(kinds)
        call drop(kinds)
    end subroutine

end program f_answers
